import {
  createHash,
  createPrivateKey,
  createPublicKey,
  generateKeyPairSync,
  sign,
  verify,
} from 'node:crypto';
import type { KeyObject } from 'node:crypto';
import type { Queryable } from '../store/db.js';
import type { BeaconChain } from './beacon.js';
import { raffleQueries } from './keys.js';

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
 * key (raw 32 bytes, base64url) and its id (keyIdOf). The kind inside the payload keeps a signature
 * of one kind from passing as another.
 */
export interface Signed<T> {
  readonly payload: T;
  readonly keyId: string;
  readonly publicKey: string;
  readonly signature: string;
}

export type EntryReceipt = Signed<EntryReceiptPayload>;
export type CloseStatement = Signed<ClosePayload>;

/** The published signing key (GET /.well-known/lockstock/raffle-key). */
export interface PublicSigningKey {
  readonly algorithm: 'Ed25519';
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

/** A key's id: the first 16 bytes of SHA-256 of its raw public key, hex. */
export function keyIdOf(publicKey: string): string {
  return createHash('sha256').update(Buffer.from(publicKey, 'base64url')).digest('hex').slice(0, 32);
}

const publicKeyObject = (publicKey: string): KeyObject =>
  createPublicKey({ key: { kty: 'OKP', crv: 'Ed25519', x: publicKey }, format: 'jwk' });

/**
 * Whether `doc` is a well-formed signed document of `kind` whose signature is good under the key it
 * names (its key id is that key's). Which key that must be is the caller's question.
 */
export function signatureHolds(doc: unknown, kind: string): boolean {
  if (doc === null || typeof doc !== 'object') return false;
  const { payload, keyId, publicKey, signature } = doc as Partial<Signed<{ kind?: unknown }>>;
  if (typeof publicKey !== 'string' || typeof signature !== 'string' || typeof keyId !== 'string')
    return false;
  if (payload === null || typeof payload !== 'object' || payload.kind !== kind) return false;
  if (!/^[A-Za-z0-9_-]{43}$/.test(publicKey) || keyIdOf(publicKey) !== keyId) return false;
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
 * The service's signer: the Ed25519 key kept in the record (raffle_signing_key, made by the first
 * process that needs it), loaded once per process.
 */
export class RaffleSigner {
  private loaded?: Promise<{ privateKey: KeyObject; key: PublicSigningKey }>;

  constructor(private readonly db: Queryable) {}

  /** The public key receipts and close statements are signed with. */
  async publicKey(): Promise<PublicSigningKey> {
    return (await this.load()).key;
  }

  async sign<T extends { kind: string }>(payload: T): Promise<Signed<T>> {
    const { privateKey, key } = await this.load();
    const signature = sign(null, Buffer.from(canonicalJson(payload)), privateKey).toString('base64url');
    return { payload, keyId: key.keyId, publicKey: key.publicKey, signature };
  }

  private load() {
    this.loaded ??= this.fetch().catch((error: unknown) => {
      this.loaded = undefined; // a record that was down: ask again next time
      throw error;
    });
    return this.loaded;
  }

  private async fetch() {
    const pair = generateKeyPairSync('ed25519');
    const made = {
      der: pair.privateKey.export({ format: 'der', type: 'pkcs8' }),
      x: String(pair.publicKey.export({ format: 'jwk' }).x),
    };
    for (let attempt = 0; attempt < 2; attempt++) {
      const { rows } = await this.db.query<{ private_key: Buffer; public_key: string }>(
        raffleQueries.signingKey,
        [made.der, made.x],
      );
      const row = rows[0];
      if (!row) continue;
      const privateKey = createPrivateKey({ key: row.private_key, format: 'der', type: 'pkcs8' });
      const key = {
        algorithm: 'Ed25519',
        keyId: keyIdOf(row.public_key),
        publicKey: row.public_key,
      } as const;
      return { privateKey, key };
    }
    throw new Error('raffle_signing_key: no key made and none found');
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
