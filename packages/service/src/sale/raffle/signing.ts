import { createHash, createPublicKey, sign, verify } from 'node:crypto';
import type { KeyObject } from 'node:crypto';
import { jwkThumbprint, loadServiceKey, type ServiceKey } from '../store/signing-key.js';
import type { Queryable } from '../store/db.js';
import type { BeaconChain } from './beacon.js';

/**
 * What fixes a raffle's draw before any entry, as every entry receipt carries it: the sale, the
 * SHA-256 of the secret seed, when entries close, and the public randomness beacon whose first round
 * after the close is mixed into the draw (beacon.ts). `beacon` null: none (commit–reveal only: the
 * operator knows the seed from creation; docs/raffle-verification.md).
 */
export interface RaffleCommitment {
  readonly saleId: string;
  readonly seedHash: string;
  /** ISO 8601: entries close then at the latest (an early draw closes them sooner). */
  readonly closesAt: string;
  readonly beacon: BeaconChain | null;
}

/** A buyer's proof that their entry was accepted under this commitment. */
export interface EntryReceiptPayload {
  readonly kind: 'lockstock.raffle.entry.v1';
  readonly entryHash: string;
  readonly commitment: RaffleCommitment;
}

/** The entry list as the draw fixed it: how many, and their Merkle root (merkle.ts). */
export interface ClosePayload {
  readonly kind: 'lockstock.raffle.close.v1';
  readonly commitment: RaffleCommitment;
  readonly entries: number;
  /** hex Merkle root of the entry hashes, sorted (merkle.ts) */
  readonly root: string;
  readonly closedAt: string;
  /** The beacon round the draw waits for: the first after closedAt (absent without a beacon). */
  readonly round?: number;
}

/**
 * A payload signed by the service: Ed25519 over its canonical JSON (canonicalJson), with the public
 * key (raw 32 bytes, base64url) and its id: `kid`, the key's RFC 7638 thumbprint (the `kid` of the
 * service's JWKS and of its admissions). Documents signed before the service had one key carry
 * `keyId` (keyIdOf) instead; verifiers accept either. Neither is signed: each is checked against the
 * public key. The kind inside the payload keeps a signature of one kind from passing as another.
 */
export interface Signed<T> {
  readonly payload: T;
  readonly kid?: string;
  /** The old id (keyIdOf), on documents signed before `kid`. */
  readonly keyId?: string;
  readonly publicKey: string;
  readonly signature: string;
}

export type EntryReceipt = Signed<EntryReceiptPayload>;
export type CloseStatement = Signed<ClosePayload>;

/**
 * The published signing key (GET /.well-known/lockstock/raffle-key): the service's one key
 * (signing-key.ts), the JWKS's. `keyId` is its old id, kept for the clients that read it.
 */
export interface PublicSigningKey {
  readonly algorithm: 'Ed25519';
  readonly kid: string;
  readonly keyId: string;
  readonly publicKey: string;
}

/** JSON with object keys sorted at every level and no whitespace: the bytes that are signed. */
export function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  if (value !== null && typeof value === 'object') {
    const entries = Object.entries(value as Record<string, unknown>)
      .filter(([, v]) => v !== undefined)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonicalJson(v)}`).join(',')}}`;
  }
  return JSON.stringify(value);
}

/** A key's old id (`keyId`): the first 16 bytes of SHA-256 of its raw public key, hex. */
export function keyIdOf(publicKey: string): string {
  return createHash('sha256').update(Buffer.from(publicKey, 'base64url')).digest('hex').slice(0, 32);
}

const publicKeyObject = (publicKey: string): KeyObject =>
  createPublicKey({ key: { kty: 'OKP', crv: 'Ed25519', x: publicKey }, format: 'jwk' });

/** The id a signed document names its key by: `kid`, or on an older document `keyId`. */
export const keyNameOf = (doc: Signed<unknown>): string => doc.kid ?? doc.keyId ?? '(none)';

/**
 * Whether `doc` is a well-formed signed document of `kind` whose signature is good under the key it
 * names (its `kid` — or on an older document its `keyId` — is that key's; one of them at least).
 * Which key that must be is the caller's question.
 */
export function signatureHolds(doc: unknown, kind: string): boolean {
  if (doc === null || typeof doc !== 'object') return false;
  const { payload, kid, keyId, publicKey, signature } = doc as Partial<Signed<{ kind?: unknown }>>;
  if (typeof publicKey !== 'string' || typeof signature !== 'string') return false;
  if (payload === null || typeof payload !== 'object' || payload.kind !== kind) return false;
  if (!/^[A-Za-z0-9_-]{43}$/.test(publicKey)) return false;
  if (kid === undefined && keyId === undefined) return false;
  if (kid !== undefined && kid !== jwkThumbprint(publicKey)) return false;
  if (keyId !== undefined && keyId !== keyIdOf(publicKey)) return false;
  try {
    return verify(
      null,
      Buffer.from(canonicalJson(payload)),
      publicKeyObject(publicKey),
      Buffer.from(signature, 'base64url'),
    );
  } catch {
    return false; // a key or signature that is not Ed25519's shape
  }
}

/**
 * The raffles' signer: the service's one key (signing-key.ts), loaded from the record once per
 * process, when first needed.
 */
export class RaffleSigner {
  private loaded?: Promise<ServiceKey>;

  constructor(private readonly db: Queryable) {}

  /** The public key receipts and close statements are signed with. */
  async publicKey(): Promise<PublicSigningKey> {
    const { x, kid } = await this.load();
    return { algorithm: 'Ed25519', kid, keyId: keyIdOf(x), publicKey: x };
  }

  async sign<T extends { kind: string }>(payload: T): Promise<Signed<T>> {
    const { privateKey, x, kid } = await this.load();
    const signature = sign(null, Buffer.from(canonicalJson(payload)), privateKey).toString('base64url');
    return { payload, kid, publicKey: x, signature };
  }

  private load() {
    this.loaded ??= loadServiceKey(this.db).catch((error: unknown) => {
      this.loaded = undefined; // a record that was down: ask again next time
      throw error;
    });
    return this.loaded;
  }
}

/** A raffle's commitment from its record (seed_hash, closes_at, beacon). */
export function commitmentOf(
  saleId: string,
  seedHash: string,
  closesAt: Date | string,
  beacon: BeaconChain | null = null,
): RaffleCommitment {
  return { saleId, seedHash, closesAt: new Date(closesAt).toISOString(), beacon };
}
