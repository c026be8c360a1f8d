-- Names the fencing-token sequence: quoted by the server (format %I), in the given schema or the
-- current one, and whether it exists already.
-- $1 schema (text, null: the current schema), $2 sequence name (text)
-- Returns one row: qualified (text, safe to use as an identifier), present (boolean).
SELECT format('%I.%I', s.schema, $2::text) AS qualified,
       to_regclass(format('%I.%I', s.schema, $2::text)) IS NOT NULL AS present
  FROM (SELECT coalesce($1::text, current_schema()) AS schema) AS s;
