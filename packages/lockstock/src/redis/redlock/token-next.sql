-- The next fencing token (PostgresTokenSource). Returns one row: token (bigint).
SELECT nextval('lockstock_fencing_tokens') AS token;
