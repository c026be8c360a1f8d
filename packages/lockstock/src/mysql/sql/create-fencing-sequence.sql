-- MariaDB (≥ 10.3): the fencing sequence, one for every lock name, from which try-lock-sequence.sql
-- and draw-token-sequence.sql draw tokens. Strictly increasing globally, so strictly increasing per
-- name: every connection draws from one server-wide counter, and the value stored on disk
-- (next_not_cached_value) is written ahead of the CACHE values the server hands out from memory, so
-- after a restart it starts past every token ever handed out (the unused cached ones are skipped:
-- gaps, never a repeat). CACHE 1000: one InnoDB write per 1000 tokens instead of one per acquire.
-- InnoDB: that write is as durable as a commit of the fencing table's was.
-- {{sequence}}: the sequence, quoted. {{start}}: its first value, above every token the fencing table
-- handed out (fencing-start.sql), so a name that had table tokens keeps growing. Idempotent.
CREATE SEQUENCE IF NOT EXISTS {{sequence}} START WITH {{start}} CACHE 1000 ENGINE = InnoDB;
