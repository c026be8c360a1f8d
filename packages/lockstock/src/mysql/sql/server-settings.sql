-- The settings the server check reads (MySqlBackend.checkServer, `lockstock doctor`): read-only, on
-- MySQL and MariaDB alike (super_read_only is MySQL's only: not read here).
-- Returns one row: version (text), read_only (0/1), wait_timeout (seconds, this session's),
-- flush_at_commit (innodb_flush_log_at_trx_commit: 1 flushes every commit).
SELECT VERSION() AS version,
       @@global.read_only AS read_only,
       @@session.wait_timeout AS wait_timeout,
       @@global.innodb_flush_log_at_trx_commit AS flush_at_commit;
