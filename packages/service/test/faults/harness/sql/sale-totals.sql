-- The fault checker's view of one sale's totals: its stock, limit, and the units the record counts
-- as sold (sales.sold, kept by the pipeline in the same transaction as the orders).
-- $1  sale id
SELECT stock, sold, per_user_limit
FROM sales
WHERE id = $1;
