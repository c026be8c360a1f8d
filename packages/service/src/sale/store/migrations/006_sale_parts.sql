-- Split sales (sale/shards/, ARCHITECTURE.md "One sale across shards"): a sale's stock in K parts,
-- each on its own Redis Cluster slot, so one hot sale can use more than one Redis core.
--
-- * `sales.part_tags`: the hash tag of each part, chosen once at creation (placement on the Cluster's
--   masters) and never recomputed; null for a sale of one part (its tag is sale:<id>).
-- * `orders.part`: the part an order was reserved in (null for a sale of one part). The stream entry
--   ids of different parts can be equal (each part's stream has its own clock), so a split sale's
--   orders keep `stream_id` as "<ms>-<seq>@<part>": the inbox (sale_id, stream_id) stays unique. The
--   partial index finds a part's newest entries (recovery compares them with the part's stream); it
--   holds no row of an unsplit sale, whose inserts pay nothing for it.
-- * `stock_moves`: every step of the transfers between parts, one row per stream entry (the inbox of
--   these entries): a part's allocation is its initial share + units in - units out. A transfer is
--   debited once and credited at most once: UNIQUE (sale, transfer, kind).

ALTER TABLE sales ADD COLUMN part_tags text[]
  CONSTRAINT sales_parts CHECK (part_tags IS NULL OR cardinality(part_tags) BETWEEN 2 AND 16);

ALTER TABLE orders ADD COLUMN part smallint CHECK (part >= 0);
CREATE INDEX orders_part_entries ON orders (sale_id, part, stream_id) WHERE part IS NOT NULL;

CREATE TABLE stock_moves (
  sale_id     bigint      NOT NULL,
  part        smallint    NOT NULL CHECK (part >= 0),            -- the part whose stream holds the entry
  stream_id   text        NOT NULL,                              -- "<ms>-<seq>" in that part's stream
  transfer_id text        NOT NULL,
  kind        text        NOT NULL CHECK (kind IN ('out', 'in')),
  other_part  smallint    NOT NULL CHECK (other_part >= 0),      -- the receiver of an out, the donor of an in
  units       integer     NOT NULL CHECK (units >= 1),
  moved_at    timestamptz NOT NULL,                              -- Redis time of the entry
  PRIMARY KEY (sale_id, part, stream_id),
  CONSTRAINT stock_moves_once UNIQUE (sale_id, transfer_id, kind)
);
