-- Table of PostgresFencedStore: one row per key, with the fence of the last accepted write.
-- Idempotent; PostgresFencedStore.migrate() runs it.
CREATE TABLE IF NOT EXISTS lockstock_fenced_values (
  key         text        PRIMARY KEY,
  value       jsonb       NOT NULL,
  fence_token bigint      NOT NULL,
  fence_owner text        NOT NULL,
  updated_at  timestamptz NOT NULL DEFAULT now()
);
