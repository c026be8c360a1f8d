import { createPublicKey, sign, verify, type KeyObject } from 'node:crypto';
import { publicJwkOf, type Jwks, type ServiceKey } from '../store/signing-key.js';

export type { Jwks, PublicJwk } from '../store/signing-key.js';

/**
 * Admissions as standard JWTs signed with Ed25519 (JWS `EdDSA`), so that a service other than the
 * one that issued them — an edge, a checkout service — can check one with the published key set
 * (`GET /.well-known/jwks.json`) and no secret. The key is the service's one signing key, kept in
 * the record (signing-key.ts), so every process on one record signs and checks with the same key,
 * the one raffle receipts are signed with; the JWT header's `kid` is its RFC 7638 thumbprint.
 *
 * Claims: `iss` "lockstock", `sub` the buyer, `aud` "lockstock:sale:<id>", `at` when the buyer was
 * admitted (ms, Redis clock: names the admission in Redis, where the reservation checks and spends
 * it), `nbf`/`exp` the window it may be used in (s, for the holder's information: the reservation
 * judges on the Redis clock), `iat`.
 */
export interface AdmissionClaims {
  readonly iss: 'lockstock';
  readonly sub: string;
  readonly aud: string;
  readonly at: number;
  readonly nbf: number;
  readonly exp: number;
  readonly iat: number;
}

const ISSUER = 'lockstock';
export const audienceOf = (saleId: string) => `lockstock:sale:${saleId}`;
const b64 = (value: object) => Buffer.from(JSON.stringify(value)).toString('base64url');

/**
 * The service's admissions: signs them with its key, publishes the key set, and checks a token
 * against that set by the header's `kid`, as any other verifier does (one key today; a set with a
 * retired key too would be checked the same way: docs/service.md "One signing key").
 */
export class AdmissionKeys {
  private readonly privateKey: KeyObject;
  private readonly header: string;
  private readonly verifying: ReadonlyMap<string, KeyObject>;
  readonly jwks: Jwks;

  constructor(key: ServiceKey) {
    this.privateKey = key.privateKey;
    this.header = b64({ alg: 'EdDSA', typ: 'JWT', kid: key.kid });
    this.jwks = { keys: [publicJwkOf(key)] };
    this.verifying = new Map([[key.kid, key.publicKey]]);
  }

  sign(admission: {
    saleId: string;
    userId: string;
    at: number;
    validFrom: number;
    expiresAt: number;
  }): string {
    const claims: AdmissionClaims = {
      iss: ISSUER,
      sub: admission.userId,
      aud: audienceOf(admission.saleId),
      at: admission.at,
      nbf: Math.floor(admission.validFrom / 1000),
      exp: Math.ceil(admission.expiresAt / 1000),
      iat: Math.floor(Date.now() / 1000),
    };
    const signingInput = `${this.header}.${b64(claims)}`;
    return `${signingInput}.${sign(null, Buffer.from(signingInput), this.privateKey).toString('base64url')}`;
  }

  /** The claims of an admission this service signed for this buyer and sale; undefined otherwise. */
  open(token: string, saleId: string, userId: string): AdmissionClaims | undefined {
    const key = this.verifying.get(signingKidOf(token) ?? '');
    const claims = key && claimsSignedBy(token, key);
    return claims && bindsTo(claims, saleId, userId) ? claims : undefined;
  }
}

/**
 * What another service runs: checks an admission against a published key set (fetched from
 * `/.well-known/jwks.json` and cached as it likes), for this buyer and sale, and within its window on
 * `now` (ms; the holder's own clock, with `leewayMs` for skew). Node's `node:crypto` only: copy this
 * function, or use any JOSE library that speaks EdDSA. Returns the claims, or why it refuses.
 */
export function verifyAdmission(
  token: string,
  jwks: Jwks,
  expected: { saleId: string; userId: string; now?: number; leewayMs?: number },
): { ok: true; claims: AdmissionClaims } | { ok: false; reason: string } {
  const kid = signingKidOf(token);
  const jwk = jwks.keys.find((k) => k.kid === kid);
  if (kid === undefined || !jwk) return { ok: false, reason: 'not signed by a published key' };
  const claims = claimsSignedBy(token, createPublicKey({ key: jwk, format: 'jwk' }));
  if (!claims) return { ok: false, reason: 'bad signature' };
  if (!bindsTo(claims, expected.saleId, expected.userId)) {
    return { ok: false, reason: 'issued for another buyer or sale' };
  }
  const now = expected.now ?? Date.now();
  const leeway = expected.leewayMs ?? 5_000;
  if (now + leeway < claims.nbf * 1000) return { ok: false, reason: 'not valid yet' };
  if (now - leeway >= claims.exp * 1000) return { ok: false, reason: 'expired' };
  return { ok: true, claims };
}

/** The `kid` of a token's header, if it says EdDSA. */
function signingKidOf(token: string): string | undefined {
  if (token.length > 2048) return undefined;
  const header = decodePart(token.split('.', 1)[0] ?? '');
  return header?.alg === 'EdDSA' && typeof header.kid === 'string' ? header.kid : undefined;
}

function claimsSignedBy(token: string, key: KeyObject): AdmissionClaims | undefined {
  if (token.length > 2048) return undefined;
  const parts = token.split('.');
  if (parts.length !== 3) return undefined;
  const [header, body, signature] = parts as [string, string, string];
  try {
    if (!verify(null, Buffer.from(`${header}.${body}`), key, Buffer.from(signature, 'base64url'))) {
      return undefined;
    }
  } catch {
    return undefined;
  }
  const claims = decodePart(body);
  return claims && typeof claims.at === 'number' && typeof claims.sub === 'string'
    ? (claims as unknown as AdmissionClaims)
    : undefined;
}

const bindsTo = (claims: AdmissionClaims, saleId: string, userId: string) =>
  claims.iss === ISSUER && claims.sub === userId && claims.aud === audienceOf(saleId);

function decodePart(part: string): Record<string, unknown> | undefined {
  try {
    const value: unknown = JSON.parse(Buffer.from(part, 'base64url').toString('utf8'));
    return typeof value === 'object' && value !== null ? (value as Record<string, unknown>) : undefined;
  } catch {
    return undefined;
  }
}
