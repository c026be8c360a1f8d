-- Tables of the lab's SQL strategies; every run uses its own run_id, so runs never see each other.
CREATE TABLE IF NOT EXISTS lab_stock (
  run_id  text    PRIMARY KEY,
  stock   integer NOT NULL,   -- no CHECK: the lab must be able to show negative stock
  version integer NOT NULL DEFAULT 0
);
CREATE TABLE IF NOT EXISTS lab_orders (
  id     bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  run_id text   NOT NULL,
  buyer  text   NOT NULL        -- no UNIQUE: the lab must be able to show duplicates
);
CREATE INDEX IF NOT EXISTS lab_orders_run ON lab_orders (run_id);
-- The "insert lock" of seed 003: a row per held lock, unique by name.
CREATE TABLE IF NOT EXISTS lab_locks (
  name       text        PRIMARY KEY,
  holder     text        NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now()
);
