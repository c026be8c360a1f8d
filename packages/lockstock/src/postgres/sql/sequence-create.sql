-- Creates the fencing-token sequence every lock of every client draws from: one sequence for all
-- names, so tokens are strictly increasing per name (and across names), durable across restarts.
-- {{sequence}} is replaced with the server-quoted name from sequence-name.sql (DDL takes no
-- parameters). Idempotent. A role without CREATE on the schema needs it created once by one with it.
CREATE SEQUENCE IF NOT EXISTS {{sequence}};
