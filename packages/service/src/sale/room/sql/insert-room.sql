-- Records a new sale's waiting room (in the transaction that inserts the sale).
-- $1 sale id (bigint), $2 rate_per_sec (float), $3 pow_bits (int), $4 ticket_seconds (int),
-- $5 admission_seconds (int), $6 shuffle_seconds (int), $7 notice_seconds (int), $8 max_active (int),
-- $9 max_backlog (int)
-- Returns nothing.
INSERT INTO sale_rooms (sale_id, rate_per_sec, pow_bits, ticket_seconds, admission_seconds, shuffle_seconds,
                        notice_seconds, max_active, max_backlog)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9);
