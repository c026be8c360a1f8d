import {
  createHash,
  createPrivateKey,
  createPublicKey,
  hkdfSync,
  sign,
  verify,
  type KeyObject,
} from 'node:crypto';

/**
 * Admissions as standard JWTs signed with Ed25519 (JWS `EdDSA`), so that a service other than the
 * one that issued them — an edge, a checkout service — can check one with the published key set
 * (`GET /.well-known/jwks.json`) and no secret. The key pair is derived from the service's secret
 * (HKDF-SHA256, its own label), so every serve process signs with the same key without sharing
 * anything else; rotating the secret rotates the key (and its `kid`).
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

/** A JSON Web Key Set of Ed25519 public keys (RFC 7517, RFC 8037). */
export interface Jwks {
  readonly keys: Array<{
    kty: 'OKP';
    crv: 'Ed25519';
    x: string;
    kid: string;
    use: 'sig';
    alg: 'EdDSA';
  }>;
}

const ISSUER = 'lockstock';
export const audienceOf = (saleId: string) => `lockstock:sale:${saleId}`;
const PKCS8_ED25519_PREFIX = Buffer.from('302e020100300506032b657004220420', 'hex');
const b64 = (value: object) => Buffer.from(JSON.stringify(value)).toString('base64url');

/** The service's admission key: signs admissions, publishes its public half, and checks its own. */
export class AdmissionKeys {
  private readonly privateKey: KeyObject;
  private readonly publicKey: KeyObject;
  private readonly header: string;
  readonly jwks: Jwks;

  constructor(secret: string) {
    const seed = Buffer.from(hkdfSync('sha256', secret, 'lockstock', 'lockstock admission ed25519 v1', 32));
    this.privateKey = createPrivateKey({
      key: Buffer.concat([PKCS8_ED25519_PREFIX, seed]),
      format: 'der',
      type: 'pkcs8',
    });
    this.publicKey = createPublicKey(this.privateKey);
    const x = String(this.publicKey.export({ format: 'jwk' }).x);
    const kid = thumbprint(x);
    this.header = b64({ alg: 'EdDSA', typ: 'JWT', kid });
    this.jwks = { keys: [{ kty: 'OKP', crv: 'Ed25519', x, kid, use: 'sig', alg: 'EdDSA' }] };
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
    const claims = claimsSignedBy(token, this.publicKey);
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
  const header = decodePart(token.split('.')[0] ?? '');
  const jwk = jwks.keys.find((k) => k.kid === header?.kid);
  if (!header || header.alg !== 'EdDSA' || !jwk)
    return { ok: false, reason: 'not signed by a published key' };
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

/** RFC 7638 thumbprint of an Ed25519 public key: the key's id. */
function thumbprint(x: string): string {
  return createHash('sha256').update(`{"crv":"Ed25519","kty":"OKP","x":"${x}"}`).digest('base64url');
}
