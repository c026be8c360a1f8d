-- Records where a new split sale's parts live (in the transaction that created it).
-- $1 sale id (bigint), $2 the parts' hash tags (text[])
-- Returns nothing.
UPDATE sales SET part_tags = $2::text[] WHERE id = $1;
