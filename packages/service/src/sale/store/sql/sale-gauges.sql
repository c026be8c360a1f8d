-- What /metrics reads from the record for the sales it shows, at every scrape: one row per sale,
-- by primary key (no scan of the orders).
-- $1 sale ids (bigint[])
-- Returns rows (id as text): id, stock (units the sale offers), sold (units held by recorded orders).
SELECT id::text AS id, stock, sold
  FROM sales
 WHERE id = ANY($1::bigint[]);
