-- The next fencing token of a lock this session was just granted by a blocking wait (wait-lock.sql):
-- drawn while the lock is held, so tokens grow in the order the lock passes.
-- {{table}}: the fencing table, quoted. ? 1 server name
-- Returns: insertId = the token.
INSERT INTO {{table}} (name, token) VALUES (?, LAST_INSERT_ID(1))
ON DUPLICATE KEY UPDATE token = LAST_INSERT_ID(token + 1);
