-- Orders and holdings keep referring to their sale without a per-row foreign-key check.
--
-- A foreign key checks every inserted row on its own (a trigger running a SELECT ... FOR KEY SHARE of
-- the sale): measured with EXPLAIN ANALYZE, half the time of inserting a batch of 1,000 orders and
-- half of adding 1,000 holdings, for a sale the same transaction has already locked FOR UPDATE
-- (store/sql/lock-sales.sql). What the keys guaranteed still holds, checked once per batch:
-- * the pipeline writes orders and holdings only for sales it locked in that transaction; an entry of
--   an unknown sale is decided `unknown_sale` and dead-lettered (store/decide.ts), never written;
-- * a sale is never deleted: the trigger below refuses DELETE and TRUNCATE on sales, so a row that
--   existed when the batch locked it exists for good.
-- The CHECK constraints (the oversell and per-user fences) are untouched.

ALTER TABLE orders DROP CONSTRAINT orders_sale_id_fkey;
ALTER TABLE purchases DROP CONSTRAINT purchases_sale_id_fkey;

CREATE FUNCTION lockstock_refuse_sale_deletion() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  RAISE EXCEPTION 'sales are never deleted: orders and holdings refer to them'
    USING ERRCODE = 'restrict_violation';
END
$$;

CREATE TRIGGER sales_never_deleted
  BEFORE DELETE OR TRUNCATE ON sales
  FOR EACH STATEMENT EXECUTE FUNCTION lockstock_refuse_sale_deletion();
