-- The service's raffle signing key (migrations/011): made by the first caller, read by the others. A
-- caller that lost the race to make it may not see the winner's row in this statement's snapshot (no
-- row returned): it asks again.
-- $1 a new private key (PKCS#8 DER, bytea), $2 its public key (raw, base64url)
-- Returns zero or one row: private_key, public_key.
WITH made AS (
  INSERT INTO raffle_signing_key (private_key, public_key) VALUES ($1, $2)
  ON CONFLICT (singleton) DO NOTHING
  RETURNING private_key, public_key
)
SELECT private_key, public_key FROM made
UNION ALL
SELECT private_key, public_key FROM raffle_signing_key
LIMIT 1;
