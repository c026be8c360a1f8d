-- The fencing table: one row per server-side lock name (the name's next token is token + 1, drawn by
-- try-lock.sql and draw-token.sql), durable across restarts, so tokens are strictly increasing per lock
-- name. `holder` and `connection_id` are the last grant's owner and connection, recorded for
-- elections only (leader.sql reads the leader from them, checked against IS_USED_LOCK). Binary
-- collation: names are compared byte for byte.
-- {{table}}: the table, quoted. Idempotent; a user without CREATE needs it made once by one with it.
CREATE TABLE IF NOT EXISTS {{table}} (
  name VARCHAR(64) CHARACTER SET ascii COLLATE ascii_bin NOT NULL PRIMARY KEY,
  token BIGINT UNSIGNED NOT NULL,
  holder VARCHAR(256) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL DEFAULT '',
  connection_id BIGINT UNSIGNED NOT NULL DEFAULT 0
) ENGINE = InnoDB;
