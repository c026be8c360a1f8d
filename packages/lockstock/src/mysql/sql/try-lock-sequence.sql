-- MariaDB: try-lock.sql with the token drawn from the fencing sequence instead of a table row — no
-- InnoDB write per acquire. IF evaluates its condition first and only the branch it picks, so a
-- refused try (GET_LOCK answers 0) draws nothing (the tests check the sequence did not move), and a
-- granted one draws while the lock is held: tokens grow in the order the lock passes.
-- {{sequence}}: the fencing sequence, quoted. ? 1 server name
-- Returns one row: token (the token; NULL when the lock is held elsewhere).
SELECT IF(GET_LOCK(?, 0) = 1, NEXTVAL({{sequence}}), NULL) AS token;
