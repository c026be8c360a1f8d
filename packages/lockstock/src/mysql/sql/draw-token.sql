-- The next fencing token of a lock this session was just granted by a blocking wait (wait-lock.sql):
-- drawn while the lock is held, so tokens grow in the order the lock passes. Records the holder and
-- its connection as try-lock.sql does.
-- {{table}}: the fencing table, quoted. ? 1 server name, 2 owner, 3 owner
-- Returns: insertId = the token.
INSERT INTO {{table}} (name, token, holder, connection_id)
VALUES (?, LAST_INSERT_ID(1), ?, CONNECTION_ID())
ON DUPLICATE KEY UPDATE token = LAST_INSERT_ID(token + 1), holder = ?, connection_id = CONNECTION_ID();
