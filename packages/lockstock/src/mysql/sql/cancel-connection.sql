-- MySQL: ends the statement a connection runs (its waiting GET_LOCK, see waiting-connection.sql).
-- KILL takes no placeholders: {{connection}} is replaced with the integer id.
KILL QUERY {{connection}};
