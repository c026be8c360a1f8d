-- forceUnlock: ends a holder's connection; the server frees every user lock it held, and its client
-- sees the connection end (its holds are lost at once).
-- KILL takes no placeholders: {{connection}} is replaced with the integer id.
KILL CONNECTION {{connection}};
