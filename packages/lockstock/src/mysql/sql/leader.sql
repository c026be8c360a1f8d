-- An election's leader: the owner and token of the last grant of its lock, if the connection that
-- took that grant holds the lock now (a newer holder that has not drawn its token yet shows no
-- leader: its term has not begun).
-- {{table}}: the fencing table, quoted. ? 1 server name, 2 server name
-- Returns one row (holder, token) while the lock is held by its last grantee; none otherwise.
SELECT holder, token FROM {{table}} WHERE name = ? AND connection_id = IS_USED_LOCK(?);
