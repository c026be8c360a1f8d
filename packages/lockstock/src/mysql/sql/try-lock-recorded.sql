-- try-lock.sql for an election's lock: the same one try and token, and the row also records the
-- holder (owner) and its connection, from which leader.sql reads the leader. Only elections pay for
-- the wider row write.
-- {{table}}: the fencing table, quoted. ? 1 server name, 2 owner, 3 server name, 4 owner
-- Returns: affectedRows 0 when the lock is held elsewhere; else 1 or 2, with insertId = the token.
INSERT INTO {{table}} (name, token, holder, connection_id)
SELECT ?, LAST_INSERT_ID(1), ?, CONNECTION_ID() FROM DUAL WHERE GET_LOCK(?, 0) = 1
ON DUPLICATE KEY UPDATE token = LAST_INSERT_ID(token + 1), holder = ?, connection_id = CONNECTION_ID();
