-- Inside a batch's transaction, before anything is decided: may this pipeline still record a batch
-- whose step began at fence $2? Not if a rebuild went ahead without it (deleted its row, or raised
-- `fenced_below` above $2). FOR KEY SHARE holds off a rebuild's FOR UPDATE until this transaction
-- ends (the rebuild then sees the batch in the record) without blocking the lease's renewals.
-- $1 consumer, $2 fence the batch's step began at (bigint)
-- Returns fenced (boolean); no row: the lease is gone (fenced out too).
SELECT fenced_below > $2::bigint AS fenced
  FROM pipeline_leases
 WHERE consumer = $1
   FOR KEY SHARE;
