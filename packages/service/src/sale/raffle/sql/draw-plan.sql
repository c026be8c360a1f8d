-- Before draw-order.sql, in its transaction: no nested loop. The entries were just recorded in bulk,
-- so the planner's statistics may still say the table is empty, and a nested loop joining a million
-- entries to their million places never ends (a hash join takes seconds).
SET LOCAL enable_nestloop = off;
