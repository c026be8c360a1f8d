-- The buyers of every order recorded for a run (the checker's source of truth).
-- $1 run id
-- Returns rows {buyer}.
SELECT buyer FROM lab_orders WHERE run_id = $1
