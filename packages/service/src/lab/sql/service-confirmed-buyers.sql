-- The buyers of a sale's confirmed orders in the sale service's own record.
-- $1 sale id
-- Returns rows {user_id}.
SELECT user_id FROM orders WHERE sale_id = $1 AND status = 'confirmed'
