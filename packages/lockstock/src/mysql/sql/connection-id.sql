-- The server connection answering: a session check (sessions.ts) asks it of every holding session,
-- which must answer, from the same connection id, within the check interval.
-- Returns one row: id.
SELECT CONNECTION_ID() AS id;
