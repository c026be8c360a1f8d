-- What every user holds in confirmed and paid orders of a sale, for reconciliation.
-- $1 sale id (bigint)
-- Returns user_id, quantity.
SELECT user_id, quantity FROM purchases WHERE sale_id = $1 AND quantity > 0;
