-- Every recorded transfer step of a split sale (a few per part): what each part gave and was given.
-- $1 sale id (bigint)
-- Returns part, stream_id, transfer_id, kind ('out' | 'in'), other_part, units.
SELECT part, stream_id, transfer_id, kind, other_part, units
  FROM stock_moves
 WHERE sale_id = $1;
