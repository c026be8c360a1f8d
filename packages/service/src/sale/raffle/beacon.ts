import { createHash } from 'node:crypto';
import { bls12_381 } from '@noble/curves/bls12-381.js';

/**
 * A public randomness beacon (drand, https://drand.love): a chain of rounds, one every `period`
 * seconds from `genesisTime`, each a BLS signature of its round number by a threshold key nobody
 * holds alone. Only the unchained G1 scheme of drand's quicknet is spoken here
 * (`bls-unchained-g1-rfc9380`): the signature is a G1 point (48 bytes compressed) over
 * SHA-256(round as 8 bytes, big-endian), hashed to G1 as RFC 9380 says with the DST below; the public
 * key a G2 point (96 bytes). A round's randomness is SHA-256 of its signature, so a round is checked
 * offline with the chain's public key alone.
 *
 * node:crypto has no pairing: the check is @noble/curves' BLS12-381 (audited, no dependencies of its
 * own, what drand's JavaScript client uses).
 */
export interface BeaconChain {
  /** The chain's hash (hex; drand's id of the chain). */
  readonly chainHash: string;
  /** The group public key: a compressed G2 point, hex. */
  readonly publicKey: string;
  /** Unix seconds of round 1. */
  readonly genesisTime: number;
  /** Seconds between rounds. */
  readonly period: number;
  readonly scheme: 'bls-unchained-g1-rfc9380';
}

/** One round as drand publishes it (GET <chain url>/public/<round>). */
export interface BeaconRound {
  readonly round: number;
  /** The BLS signature of the round: a compressed G1 point, hex. */
  readonly signature: string;
}

/** drand's quicknet on the League of Entropy mainnet (its /info), the default chain to pin. */
export const QUICKNET: BeaconChain = {
  chainHash: '52db9ba70e0cc0f6eaf7803dd07447a1f5477735fd3f661792ba94600c84e971',
  publicKey:
    '83cf0f2896adee7eb8b5f01fcad3912212c437e0073e911fb90022d3e760183c8c4b450b6a0a6c3ac6a5776a2d1064510d1fec758c921cc22b0e17e63aaf4bcb5ed66304de9cf809bd274ca73bab4af5a6e9c76a4bc09e76eae8991ef5ece45a',
  genesisTime: 1692803367,
  period: 3,
  scheme: 'bls-unchained-g1-rfc9380',
};

/** Whether two chains are the same: key, genesis, period and scheme (the round a close fixes and who signs it). */
export const sameChain = (a: BeaconChain, b: BeaconChain): boolean =>
  a.chainHash === b.chainHash &&
  a.publicKey === b.publicKey &&
  a.genesisTime === b.genesisTime &&
  a.period === b.period &&
  a.scheme === b.scheme;

/** RFC 9380 hash-to-G1 domain separation tag of drand's G1 scheme. */
export const BEACON_DST = 'BLS_SIG_BLS12381G1_XMD:SHA-256_SSWU_RO_NUL_';

/** What a round signs: SHA-256 of its number as 8 bytes, big-endian. */
export function roundMessage(round: number): Buffer {
  const bytes = Buffer.alloc(8);
  bytes.writeBigUInt64BE(BigInt(round));
  return createHash('sha256').update(bytes).digest();
}

/** The Unix time (ms) a round is out. */
export const roundTime = (chain: BeaconChain, round: number): number =>
  (chain.genesisTime + (round - 1) * chain.period) * 1000;

/**
 * The first round out strictly after `timeMs`: the round a close at that time fixes. Nobody, the
 * operator included, knows its value when the close is signed.
 */
export function roundAfter(chain: BeaconChain, timeMs: number): number {
  const sinceGenesis = timeMs / 1000 - chain.genesisTime;
  if (sinceGenesis < 0) return 1;
  return Math.floor(sinceGenesis / chain.period) + 2;
}

/** A round's randomness: SHA-256 of its signature (hex), as drand defines it. */
export const randomnessOf = (round: BeaconRound): string =>
  createHash('sha256').update(Buffer.from(round.signature, 'hex')).digest('hex');

const HEX = /^(?:[0-9a-f]{2})+$/;

/** Whether `round` is signed by the chain's key (a pairing check, ~0.3 s on this machine). */
export function roundHolds(chain: BeaconChain, round: BeaconRound): boolean {
  if (chain.scheme !== 'bls-unchained-g1-rfc9380') return false;
  if (!Number.isSafeInteger(round.round) || round.round < 1) return false;
  if (!HEX.test(round.signature) || round.signature.length !== 96) return false;
  if (!HEX.test(chain.publicKey) || chain.publicKey.length !== 192) return false;
  const bls = bls12_381.shortSignatures;
  try {
    return bls.verify(
      Buffer.from(round.signature, 'hex'),
      bls.hash(roundMessage(round.round), BEACON_DST),
      Buffer.from(chain.publicKey, 'hex'),
    );
  } catch {
    return false; // not a point of the curve, or not in its subgroup
  }
}

/**
 * The draw's seed once the beacon's round is out: SHA-256(seed ‖ the round's randomness). The
 * operator chose the seed before any entry (its hash is the commitment) and nobody knew the round's
 * randomness until after the close, so nobody could order the entries before the list was fixed.
 */
export function drawSeedOf(seed: Buffer, round: BeaconRound | undefined): Buffer {
  if (!round) return seed;
  return createHash('sha256')
    .update(seed)
    .update(Buffer.from(randomnessOf(round), 'hex'))
    .digest();
}

/**
 * Where the service gets a round: `round(n)` is the round, undefined while it is not out yet; it
 * throws when the beacon cannot be reached (the draw waits and tries again). Each round it returns is
 * checked against the chain's key before use: a source is not trusted.
 */
export interface BeaconSource {
  readonly chain: BeaconChain;
  round(round: number): Promise<BeaconRound | undefined>;
}

/**
 * drand's HTTP API at `url` (the chain's base: `<relay>/<chain hash>`, or a relay serving one chain):
 * GET `<url>/public/<round>`. A 404 or 425 is a round not out yet. The chain (its public key above
 * all) is configured, never taken from the relay.
 */
export class HttpBeaconSource implements BeaconSource {
  constructor(
    private readonly url: string,
    readonly chain: BeaconChain = QUICKNET,
    private readonly timeoutMs = 5_000,
  ) {}

  async round(round: number): Promise<BeaconRound | undefined> {
    const response = await fetch(`${this.url.replace(/\/$/, '')}/public/${round}`, {
      signal: AbortSignal.timeout(this.timeoutMs),
    });
    if (response.status === 404 || response.status === 425) return undefined;
    if (!response.ok) throw new Error(`beacon ${this.url}: HTTP ${response.status} for round ${round}`);
    const body = (await response.json()) as { round?: unknown; signature?: unknown };
    if (body.round !== round || typeof body.signature !== 'string') {
      throw new Error(`beacon ${this.url}: a malformed answer for round ${round}`);
    }
    return { round, signature: body.signature };
  }
}
