-- MariaDB: where a new fencing sequence starts (create-fencing-sequence.sql): above the highest token
-- the fencing table holds (tokens drawn from the table before the sequence existed), 1 when empty.
-- {{table}}: the fencing table, quoted.
-- Returns one row: start.
SELECT COALESCE(MAX(token), 0) + 1 AS start FROM {{table}};
