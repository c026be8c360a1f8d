-- Sales, orders and per-user purchases: PostgreSQL is the record and the final fence. Even if Redis
-- lost writes and admitted too many reservations, these constraints keep the record within stock and
-- within each user's limit; the excess ends as rejected orders (see store/apply-orders.ts).

CREATE TABLE sales (
  id             bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  name           text        NOT NULL CHECK (char_length(name) BETWEEN 1 AND 200),
  stock          integer     NOT NULL CHECK (stock >= 0),
  -- units of confirmed orders; the CHECK is the oversell fence
  sold           integer     NOT NULL DEFAULT 0,
  per_user_limit integer     NOT NULL DEFAULT 1 CHECK (per_user_limit >= 1),
  starts_at      timestamptz NOT NULL,
  ends_at        timestamptz NOT NULL,
  created_at     timestamptz NOT NULL DEFAULT now(),
  CONSTRAINT sales_window CHECK (ends_at > starts_at),
  CONSTRAINT sales_never_oversold CHECK (sold >= 0 AND sold <= stock)
);

CREATE TABLE orders (
  id            bigint      PRIMARY KEY,           -- the id issued at reservation (snowflake)
  sale_id       bigint      NOT NULL REFERENCES sales (id),
  user_id       text        NOT NULL,
  quantity      integer     NOT NULL CHECK (quantity >= 1),
  status        text        NOT NULL CHECK (status IN ('confirmed', 'rejected')),
  reject_reason text,
  stream_id     text        NOT NULL,              -- the sale stream entry it came from
  reserved_at   timestamptz NOT NULL,
  created_at    timestamptz NOT NULL DEFAULT now(),
  -- the inbox: one effect per stream entry, however often it is delivered
  CONSTRAINT orders_inbox UNIQUE (sale_id, stream_id),
  CONSTRAINT orders_reason CHECK ((status = 'rejected') = (reject_reason IS NOT NULL))
);

CREATE INDEX orders_by_sale_user ON orders (sale_id, user_id);

-- Units each user holds in confirmed orders; the CHECK is the per-user fence.
CREATE TABLE purchases (
  sale_id        bigint  NOT NULL REFERENCES sales (id),
  user_id        text    NOT NULL,
  quantity       integer NOT NULL,
  per_user_limit integer NOT NULL,
  PRIMARY KEY (sale_id, user_id),
  CONSTRAINT purchases_within_limit CHECK (quantity >= 0 AND quantity <= per_user_limit)
);
