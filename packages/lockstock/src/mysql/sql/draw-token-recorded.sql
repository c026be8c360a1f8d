-- draw-token.sql for an election's lock: the token of a grant a blocking wait obtained, and the
-- holder and its connection recorded with it (leader.sql).
-- {{table}}: the fencing table, quoted. ? 1 server name, 2 owner, 3 owner
-- Returns: insertId = the token.
INSERT INTO {{table}} (name, token, holder, connection_id)
VALUES (?, LAST_INSERT_ID(1), ?, CONNECTION_ID())
ON DUPLICATE KEY UPDATE token = LAST_INSERT_ID(token + 1), holder = ?, connection_id = CONNECTION_ID();
