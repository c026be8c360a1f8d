import { createHash, randomBytes } from 'node:crypto';
import type { SaleRedis } from '../redis.js';
import { roomKeys } from './keys.js';
import type { RoomSigner } from './signed.js';

/**
 * Hashcash-style proof of work: the server hands a buyer a signed challenge (bound to buyer, sale and
 * expiry, with a nonce); the buyer finds a `solution` such that SHA-256(`<challenge>:<solution>`)
 * begins with `bits` zero bits (2^bits hashes expected) and sends both back. Checking costs one hash.
 * A challenge is spent once (a Redis marker under the sale's tag, until it expires): a bot pays CPU
 * per place it asks for. Used before a waiting-room ticket; the raffle may use it before an entry
 * (checkProofOfWork, then spendChallenge, or its own script spending `roomKeys(…).spentChallenge`).
 */
export interface PowChallenge {
  readonly challenge: string;
  readonly bits: number;
  /** ms since the epoch */
  readonly expiresAt: number;
}

export type PowCheck =
  | { readonly ok: true; readonly nonce: string; readonly expiresAt: number }
  | { readonly ok: false; readonly code: 'pow_invalid' | 'pow_expired'; readonly message: string };

/** How long a challenge may be worked on. */
export const CHALLENGE_TTL_MS = 10 * 60 * 1000;

export function issueChallenge(
  signer: RoomSigner,
  request: { saleId: string; userId: string; bits: number; now?: number },
): PowChallenge {
  const expiresAt = (request.now ?? Date.now()) + CHALLENGE_TTL_MS;
  const nonce = randomBytes(12).toString('base64url');
  const challenge = signer.sign('pow', {
    s: request.saleId,
    u: request.userId,
    b: request.bits,
    n: nonce,
    exp: expiresAt,
  });
  return { challenge, bits: request.bits, expiresAt };
}

/** Whether `solution` solves `challenge` for this buyer and sale, at least `minBits` hard. */
export function checkProofOfWork(
  signer: RoomSigner,
  request: {
    saleId: string;
    userId: string;
    challenge: string;
    solution: string;
    minBits: number;
    now?: number;
  },
): PowCheck {
  const payload = signer.open('pow', request.challenge);
  const invalid = (message: string): PowCheck => ({ ok: false, code: 'pow_invalid', message });
  if (!payload || typeof payload.n !== 'string' || typeof payload.exp !== 'number') {
    return invalid('The proof-of-work challenge is not one this service issued.');
  }
  if (payload.s !== request.saleId || payload.u !== request.userId) {
    return invalid('The proof-of-work challenge was issued for another buyer or sale.');
  }
  if (typeof payload.b !== 'number' || payload.b < request.minBits) {
    return invalid('The proof-of-work challenge is easier than this sale asks.');
  }
  if (payload.exp <= (request.now ?? Date.now())) {
    return {
      ok: false,
      code: 'pow_expired',
      message: 'The proof-of-work challenge has expired; ask for another.',
    };
  }
  if (!/^[0-9a-zA-Z_-]{1,64}$/.test(request.solution)) return invalid('The solution is malformed.');
  if (leadingZeroBits(powHash(request.challenge, request.solution)) < payload.b) {
    return invalid('The solution does not solve the challenge.');
  }
  return { ok: true, nonce: payload.n, expiresAt: payload.exp };
}

/** Marks a checked challenge spent; false if it was spent before (a replay). */
export async function spendChallenge(
  redis: SaleRedis,
  saleId: string,
  check: { nonce: string; expiresAt: number },
  prefix?: string,
): Promise<boolean> {
  const key = roomKeys(saleId, prefix).spentChallenge(check.nonce);
  return (await redis.set(key, '1', 'PXAT', check.expiresAt, 'NX')) === 'OK';
}

export function powHash(challenge: string, solution: string): Buffer {
  return createHash('sha256').update(`${challenge}:${solution}`).digest();
}

export function leadingZeroBits(hash: Uint8Array): number {
  let bits = 0;
  for (const byte of hash) {
    if (byte === 0) {
      bits += 8;
      continue;
    }
    return bits + Math.clz32(byte) - 24;
  }
  return bits;
}

/** Solves a challenge by counting up (what a client does; tests, the lab, the cost table). */
export function solveChallenge(challenge: string, bits: number): { solution: string; hashes: number } {
  for (let i = 0; ; i++) {
    const solution = i.toString(36);
    if (leadingZeroBits(powHash(challenge, solution)) >= bits) return { solution, hashes: i + 1 };
  }
}
