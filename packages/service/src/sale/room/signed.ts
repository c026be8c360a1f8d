import { createHmac, timingSafeEqual } from 'node:crypto';

/**
 * Small signed tokens the waiting room reads back itself (queue tickets, proof-of-work challenges;
 * admissions, which other services check too, are Ed25519 JWTs: admission-token.ts):
 * `<payload, base64url JSON>.<HMAC-SHA256, base64url>`. The key is derived from the service's secret
 * for this use only, and each kind signs under its own label, so a token of one kind (or a bearer
 * token) is never accepted as another.
 */
export type TokenKind = 'ticket' | 'pow';

export class RoomSigner {
  private readonly key: Buffer;

  constructor(secret: string) {
    this.key = createHmac('sha256', secret).update('lockstock waiting room v1').digest();
  }

  sign(kind: TokenKind, payload: object): string {
    const body = Buffer.from(JSON.stringify(payload)).toString('base64url');
    return `${body}.${this.mac(kind, body)}`;
  }

  /** The payload of a token of `kind` signed here; undefined if it is malformed or forged. */
  open(kind: TokenKind, token: string): Record<string, unknown> | undefined {
    const dot = token.indexOf('.');
    if (dot <= 0 || token.length > 2048) return undefined;
    const body = token.slice(0, dot);
    const given = Buffer.from(token.slice(dot + 1), 'base64url');
    const expected = Buffer.from(this.mac(kind, body), 'base64url');
    if (given.length !== expected.length || !timingSafeEqual(given, expected)) return undefined;
    try {
      const payload: unknown = JSON.parse(Buffer.from(body, 'base64url').toString('utf8'));
      return typeof payload === 'object' && payload !== null
        ? (payload as Record<string, unknown>)
        : undefined;
    } catch {
      return undefined;
    }
  }

  private mac(kind: TokenKind, body: string): string {
    return createHmac('sha256', this.key).update(`${kind}.${body}`).digest('base64url');
  }
}
