-- Records decided orders (confirmed and rejected), one row per stream entry.
-- $1 order ids (bigint[]), $2 sale ids (bigint[]), $3 user ids (text[]), $4 quantities (int[]),
-- $5 statuses (text[]), $6 reject reasons (text[], null when confirmed), $7 stream entry ids (text[]),
-- $8 reserved at (timestamptz[]), $9 payment deadlines (timestamptz[], null: no payment window),
-- $10 Idempotency-Keys (text[], null: the purchase had none), $11 parts (smallint[], null: a sale of one part)
-- Returns nothing.
INSERT INTO orders (id, sale_id, user_id, quantity, status, reject_reason, stream_id, reserved_at, pay_by,
                    idempotency_key, part)
SELECT *
  FROM unnest($1::bigint[], $2::bigint[], $3::text[], $4::int[], $5::text[], $6::text[], $7::text[],
              $8::timestamptz[], $9::timestamptz[], $10::text[], $11::smallint[]);
