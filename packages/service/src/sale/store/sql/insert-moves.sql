-- Records transfer steps of split sales (stream entries transfer-out / transfer-in), one row per
-- entry; an entry delivered again, or a step already recorded from another entry, adds nothing.
-- $1 sale ids (bigint[]), $2 parts (smallint[]), $3 stream entry ids (text[]), $4 transfer ids (text[]),
-- $5 kinds ('out' | 'in', text[]), $6 other parts (smallint[]), $7 units (int[]), $8 moved at (timestamptz[])
-- Returns nothing.
INSERT INTO stock_moves (sale_id, part, stream_id, transfer_id, kind, other_part, units, moved_at)
SELECT *
  FROM unnest($1::bigint[], $2::smallint[], $3::text[], $4::text[], $5::text[], $6::smallint[], $7::int[],
              $8::timestamptz[])
    ON CONFLICT DO NOTHING;
