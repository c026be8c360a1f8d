-- The server backend answering on this connection (pooler checks compare it with what the connection
-- announced at startup, and across statements).
-- Returns one row: pid (int).
SELECT pg_backend_pid() AS pid;
