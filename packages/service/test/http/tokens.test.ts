import { createSigner } from 'fast-jwt';
import { describe, expect, it } from 'vitest';
import { signToken } from '../../src/http/auth.js';
import { TokenRefusedError, TokenVerifier } from '../../src/http/tokens.js';
import { until } from '../helpers/until.js';

const SECRET = 'tokens-secret-0123456789abcdef';
const bearer = (token: string) => `Bearer ${token}`;

describe('the verified-token cache', () => {
  it('remembers a verified token, and only that exact token', () => {
    const tokens = new TokenVerifier(SECRET);
    const token = signToken(SECRET, 'alice', { admin: true });
    expect(tokens.callerOf(bearer(token))).toEqual({ userId: 'alice', admin: true });
    expect(tokens.size).toBe(1);
    expect(tokens.callerOf(bearer(token))).toEqual({ userId: 'alice', admin: true });
    // Same header and payload, another signature: not a cache hit, and refused.
    const [header, payload] = token.split('.');
    expect(() => tokens.callerOf(bearer(`${header}.${payload}.AAAA`))).toThrow(TokenRefusedError);
    const forged = createSigner({ key: 'another-secret-0123456789', algorithm: 'HS256' })({ sub: 'alice' });
    expect(() => tokens.callerOf(bearer(forged))).toThrow('The token is not valid.');
    expect(() => tokens.callerOf(undefined)).toThrow('Send a bearer token');
    expect(tokens.size).toBe(1); // refusals are not remembered
  });

  it('is bounded: the oldest tokens are forgotten first, tokens in use are kept', () => {
    const tokens = new TokenVerifier(SECRET, { maxEntries: 4 });
    const signed = Array.from({ length: 10 }, (_, i) => signToken(SECRET, `u${i}`));
    const hot = signed[0] as string;
    for (const token of signed) {
      tokens.callerOf(bearer(token));
      tokens.callerOf(bearer(hot)); // used after every other token: never the oldest
      expect(tokens.size).toBeLessThanOrEqual(4);
    }
    expect(tokens.remembers(hot)).toBe(true);
    expect(tokens.remembers(signed[9] as string)).toBe(true);
    expect(tokens.remembers(signed[1] as string)).toBe(false);
  });

  it("honours a token's exp even while it is remembered", async () => {
    const tokens = new TokenVerifier(SECRET);
    const token = signToken(SECRET, 'brief', { ttlSeconds: 1 });
    expect(tokens.callerOf(bearer(token)).userId).toBe('brief');
    const exp = JSON.parse(Buffer.from(token.split('.')[1] as string, 'base64url').toString()).exp as number;
    // Past exp by a millisecond: fast-jwt still accepts a token at exp's own millisecond.
    await until('the token to expire', async () => Date.now() > exp * 1000 + 1, 5_000);
    expect(() => tokens.callerOf(bearer(token))).toThrow('The token has expired.');
    expect(tokens.size).toBe(0);
  });
});
