-- MariaDB: ends one statement by its query id (from waiting-query.sql) — the waiting GET_LOCK, never a
-- later statement of that connection (a finished query id is ignored). GET_LOCK then answers NULL.
-- KILL takes no placeholders: {{query}} is replaced with the integer id.
KILL QUERY ID {{query}};
