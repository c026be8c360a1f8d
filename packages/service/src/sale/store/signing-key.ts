import {
  createHash,
  createPrivateKey,
  createPublicKey,
  generateKeyPairSync,
  type KeyObject,
} from 'node:crypto';
import type { Queryable } from './db.js';
import { queries } from './queries.js';

/**
 * The service's one signing key (issue 44): Ed25519, kept in the record (`raffle_signing_key`,
 * migration 011: made by the first process that needs it, read by every other), so every process on
 * one record — serve, its `--processes N` children, workers, the lab — signs with the same key. It
 * signs waiting-room admissions (JWTs, room/admission-token.ts) and raffle entry receipts and close
 * statements (raffle/signing.ts); its public half is published as a JSON Web Key Set
 * (`GET /.well-known/jwks.json`) and, for raffle verifiers, at `GET /.well-known/lockstock/raffle-key`.
 *
 * It is not derived from LOCKSTOCK_JWT_SECRET: rotating that secret during a raffle would have split
 * one raffle's receipts and its close statement across two keys. Rotation is not built (one key, one
 * row; docs/service.md "One signing key").
 */
export interface ServiceKey {
  readonly privateKey: KeyObject;
  readonly publicKey: KeyObject;
  /** The raw 32-byte public key, base64url: the JWK's `x`. */
  readonly x: string;
  /** Its RFC 7638 thumbprint (base64url): the `kid` of the JWKS entry, of admissions, of receipts. */
  readonly kid: string;
}

/** An Ed25519 public key as a JWK (RFC 7517, RFC 8037), as the JWKS publishes it. */
export type PublicJwk = {
  kty: 'OKP';
  crv: 'Ed25519';
  x: string;
  kid: string;
  use: 'sig';
  alg: 'EdDSA';
};

/** A JSON Web Key Set of Ed25519 public keys. */
export interface Jwks {
  readonly keys: PublicJwk[];
}

/** RFC 7638 thumbprint of an Ed25519 public key (`x`, base64url): SHA-256 of its canonical JWK. */
export function jwkThumbprint(x: string): string {
  return createHash('sha256').update(`{"crv":"Ed25519","kty":"OKP","x":"${x}"}`).digest('base64url');
}

export const publicJwkOf = (key: Pick<ServiceKey, 'x' | 'kid'>): PublicJwk => ({
  kty: 'OKP',
  crv: 'Ed25519',
  x: key.x,
  kid: key.kid,
  use: 'sig',
  alg: 'EdDSA',
});

/** The key of a private key (PKCS#8 DER). */
export function serviceKeyOf(privateKeyDer: Uint8Array): ServiceKey {
  const privateKey = createPrivateKey({ key: Buffer.from(privateKeyDer), format: 'der', type: 'pkcs8' });
  const publicKey = createPublicKey(privateKey);
  const x = String(publicKey.export({ format: 'jwk' }).x);
  return { privateKey, publicKey, x, kid: jwkThumbprint(x) };
}

/** A new random key (the first process's candidate for the record; tests' foreign keys). */
export function generateServiceKey(): ServiceKey {
  const pair = generateKeyPairSync('ed25519');
  return serviceKeyOf(pair.privateKey.export({ format: 'der', type: 'pkcs8' }));
}

/**
 * The service's key from the record, made there by whoever asks first (a race between processes is
 * settled by the row's primary key: everyone gets the winner's).
 */
export async function loadServiceKey(db: Queryable): Promise<ServiceKey> {
  const made = generateServiceKey();
  const der = made.privateKey.export({ format: 'der', type: 'pkcs8' });
  for (let attempt = 0; attempt < 2; attempt++) {
    const { rows } = await db.query<{ private_key: Uint8Array; public_key: string }>(queries.signingKey, [
      der,
      made.x,
    ]);
    const row = rows[0];
    if (!row) continue; // lost the race, and the winner's row is not in this statement's snapshot
    const key = serviceKeyOf(row.private_key);
    if (key.x !== row.public_key) throw new Error('raffle_signing_key: public_key is not its private key’s');
    return key;
  }
  throw new Error('raffle_signing_key: no key made and none found');
}
