-- A public randomness beacon in the raffle's draw (issue 44; sale/raffle/beacon.ts, docs/raffle-verification.md):
--
-- * `raffles.beacon`: the beacon chain the draw will use (drand: chain hash, public key, genesis,
--   period, scheme), fixed at creation and part of the commitment every entry receipt carries; null:
--   no beacon (commit–reveal only, as before).
-- * phase 'closed': the entry list is fixed and its close statement signed (with the beacon round it
--   fixes: the first after the close), the draw waits for that round. Entries are no longer recorded.
-- * `raffles.beacon_round`: the round the draw used ({ round, signature }), recorded with the places:
--   the draw orders by SHA-256(SHA-256(seed ‖ the round's randomness) ‖ entry hash); a raffle without
--   one (no beacon, or drawn before this migration) by SHA-256(seed ‖ entry hash).

ALTER TABLE raffles ADD COLUMN beacon jsonb;
ALTER TABLE raffles ADD COLUMN beacon_round jsonb;
ALTER TABLE raffles DROP CONSTRAINT raffles_phase_check;
ALTER TABLE raffles ADD CONSTRAINT raffles_phase_check CHECK (phase IN ('entries', 'closed', 'drawn'));
ALTER TABLE raffles ADD CONSTRAINT raffles_beacon_drawn
  CHECK (phase <> 'drawn' OR beacon IS NULL OR beacon_round IS NOT NULL);

-- The draw inserts a million raffle_places rows in one statement: the foreign key to raffles cost a
-- key check per row (35 s of a 87 s draw of 1,000,000 entries, EXPLAIN ANALYZE, issue 49). The
-- places are only written by the draw, in its transaction, under the raffle row's lock: the raffle
-- is there.
ALTER TABLE raffle_places DROP CONSTRAINT raffle_places_sale_id_fkey;
