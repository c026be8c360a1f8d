-- Records one sale (the seeds' "create order"); the checker counts these rows.
-- $1 run id, $2 buyer
-- Returns nothing.
INSERT INTO lab_orders (run_id, buyer) VALUES ($1, $2)
