-- How the record holds some orders (those a sale's unrecorded settlement entries name: a settlement is
-- applied once its order is no longer confirmed).
-- $1 order ids (bigint[])
-- Returns id (text), status.
SELECT id::text AS id, status FROM orders WHERE id = ANY ($1::bigint[]);
