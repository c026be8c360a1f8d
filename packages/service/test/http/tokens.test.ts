import { createSigner } from 'fast-jwt';
import { describe, expect, it } from 'vitest';
import { signToken } from '../../src/http/auth.js';
import { TokenRefusedError, TokenVerifier } from '../../src/http/tokens.js';
import { until } from '../helpers/until.js';

const SECRET = 'tokens-secret-0123456789abcdef';
const bearer = (token: string) => `Bearer ${token}`;

describe('the verified-token cache', () => {
  it('remembers a token verified a second time, and only that exact token', () => {
    const tokens = new TokenVerifier(SECRET);
    const token = signToken(SECRET, 'alice', { admin: true });
    expect(tokens.callerOf(bearer(token))).toEqual({ userId: 'alice', admin: true });
    expect(tokens.size).toBe(0); // seen once: not cached (most tokens of a flash sale come once)
    expect(tokens.callerOf(bearer(token))).toEqual({ userId: 'alice', admin: true });
    expect(tokens.remembers(token)).toBe(true);
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
      tokens.callerOf(bearer(token)); // a second time: cached from now on
      tokens.callerOf(bearer(hot)); // used after every other token: never the oldest
      expect(tokens.size).toBeLessThanOrEqual(4);
    }
    expect(tokens.remembers(hot)).toBe(true);
    expect(tokens.remembers(signed[9] as string)).toBe(true);
    expect(tokens.remembers(signed[1] as string)).toBe(false);
  });

  it('does not cache tokens that come once, and still caches one that comes back among them', () => {
    const tokens = new TokenVerifier(SECRET);
    // Fixed payloads (no iat): the same tokens every run, so whether marks collide is decided once.
    const sign = createSigner({ key: SECRET, algorithm: 'HS256', noTimestamp: true });
    const signFor = (sub: string) => sign({ sub, exp: 4_102_444_800 }) as string;
    const once = Array.from({ length: 2_000 }, (_, i) => signFor(`buyer${i}`));
    const back = signFor('returning');
    tokens.callerOf(bearer(back));
    for (const token of once) expect(tokens.callerOf(bearer(token)).userId).toMatch(/^buyer/);
    expect(tokens.size).toBe(0);
    tokens.callerOf(bearer(back)); // its mark survived 2,000 others (the table has 131,072 slots)
    expect(tokens.size).toBe(1);
    expect(tokens.remembers(back)).toBe(true);
  });

  it("honours a token's exp even while it is remembered", async () => {
    const tokens = new TokenVerifier(SECRET);
    const token = signToken(SECRET, 'brief', { ttlSeconds: 2 }); // exp is whole seconds: 1 could leave ~0 ms
    expect(tokens.callerOf(bearer(token)).userId).toBe('brief');
    expect(tokens.callerOf(bearer(token)).userId).toBe('brief');
    expect(tokens.remembers(token)).toBe(true);
    const exp = JSON.parse(Buffer.from(token.split('.')[1] as string, 'base64url').toString()).exp as number;
    // Past exp by a millisecond: fast-jwt still accepts a token at exp's own millisecond.
    await until('the token to expire', async () => Date.now() > exp * 1000 + 1, 5_000);
    expect(() => tokens.callerOf(bearer(token))).toThrow('The token has expired.');
    expect(tokens.size).toBe(0);
  });
});
