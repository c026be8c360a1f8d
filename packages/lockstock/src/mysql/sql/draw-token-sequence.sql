-- MariaDB: draw-token.sql from the fencing sequence — the token of a lock this session was just
-- granted by a blocking wait (wait-lock.sql), drawn while the lock is held.
-- {{sequence}}: the fencing sequence, quoted.
-- Returns one row: token.
SELECT NEXTVAL({{sequence}}) AS token;
