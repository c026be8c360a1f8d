-- A raffle nobody can rig, the operator included (issue 44; sale/raffle/signing.ts, README "Raffle
-- sales"):
--
-- * `raffles.closes_at`: the entry close committed to at creation (draw_at may move earlier: an
--   operator's early draw). It is part of the commitment every entry receipt carries.
-- * `raffles.close`: the close statement the draw signs in its transaction — the commitment, the
--   number of entries drawn and the Merkle root of their hashes — as published (signed envelope).
-- * `raffle_signing_key`: the service's Ed25519 key (one row, made by the first process that needs
--   it; every process signs with it). Receipts and close statements are signed with it; its public
--   key is published (GET /.well-known/lockstock/raffle-key). Whoever holds the record holds the key:
--   a signature binds the operator to what they signed, it does not keep them from signing.

ALTER TABLE raffles ADD COLUMN closes_at timestamptz;
UPDATE raffles SET closes_at = draw_at;
ALTER TABLE raffles ALTER COLUMN closes_at SET NOT NULL;
ALTER TABLE raffles ADD COLUMN close jsonb;

CREATE TABLE raffle_signing_key (
  singleton   boolean     PRIMARY KEY DEFAULT true CHECK (singleton),
  private_key bytea       NOT NULL,                -- PKCS#8 DER
  public_key  text        NOT NULL,                -- raw 32 bytes, base64url
  created_at  timestamptz NOT NULL DEFAULT now()
);
