-- The sequence Redlock fencing tokens come from (PostgresTokenSource): durable and monotonic across
-- restarts. Idempotent; run before the first token.
CREATE SEQUENCE IF NOT EXISTS lockstock_fencing_tokens;
