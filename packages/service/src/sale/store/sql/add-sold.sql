-- Adds units to each sale's total (negative: units given back); the table's CHECK refuses anything
-- over the stock or below zero.
-- $1 sale ids (bigint[]), $2 units (int[])
-- Returns nothing.
UPDATE sales s
   SET sold = s.sold + d.units
  FROM unnest($1::bigint[], $2::int[]) AS d (sale_id, units)
 WHERE s.id = d.sale_id
   AND s.id = ANY ($1::bigint[]);
