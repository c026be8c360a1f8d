-- One try at a user lock (GET_LOCK with timeout 0) in the owner's pinned session and, only when it is
-- taken, the lock's next fencing token, in one statement: the SELECT yields its one row only if
-- GET_LOCK answered 1, and the upsert then draws the token while the lock is held, so tokens grow in
-- the order the lock passes. LAST_INSERT_ID(expr) hands the token back as the statement's insert id.
-- (An election's lock records its holder too: try-lock-recorded.sql. MariaDB ≥ 10.3 draws the
-- tokens of every other lock from a sequence instead: try-lock-sequence.sql.)
-- {{table}}: the fencing table, quoted. ? 1 server name, 2 server name
-- Returns: affectedRows 0 when the lock is held elsewhere; else 1 (the name's first token) or 2, with
-- insertId = the token.
INSERT INTO {{table}} (name, token)
SELECT ?, LAST_INSERT_ID(1) FROM DUAL WHERE GET_LOCK(?, 0) = 1
ON DUPLICATE KEY UPDATE token = LAST_INSERT_ID(token + 1);
