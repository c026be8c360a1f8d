import { setTimeout as sleep } from 'node:timers/promises';
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildApp } from '../../src/http/app.js';
import { signToken } from '../../src/http/auth.js';
import type { PublishedRaffle } from '../../src/sale/raffle/raffles.js';
import { keyIdOf, signatureHolds, type Signed } from '../../src/sale/raffle/signing.js';
import { verifyRaffle } from '../../src/sale/raffle/verify.js';
import { verifyAdmission, type Jwks } from '../../src/sale/room/admission-token.js';
import { jwkThumbprint } from '../../src/sale/store/signing-key.js';
import { useSaleStack } from '../helpers/sale.js';

// Issue 44: the service has one signing key, kept in the record. Admissions (JWTs) and raffle
// receipts and close statements are signed with it; the JWKS and the raffle-key endpoint publish it
// under one `kid` (its RFC 7638 thumbprint). Two processes on one record sign with the same key,
// whatever their JWT secrets: the key is not derived from the secret.

const env = useSaleStack();
const SECRET = 'signing-key-secret-0123456789';
const OTHER_SECRET = 'signing-key-rotated-secret-0123456789';
let app: FastifyInstance;
/** Another process on the same record, started after the JWT secret was rotated. */
let other: FastifyInstance;

const bearer = (user: string, { admin = false, secret = SECRET } = {}) => ({
  authorization: `Bearer ${signToken(secret, user, { admin })}`,
});

beforeAll(async () => {
  const deps = { service: env.service, context: env.context, db: env.db, metrics: env.metrics };
  app = await buildApp({ ...deps, config: { jwtSecret: SECRET, rateLimitPerUser: 0, rateLimitPerIp: 0 } });
  other = await buildApp({
    ...deps,
    config: { jwtSecret: OTHER_SECRET, rateLimitPerUser: 0, rateLimitPerIp: 0 },
  });
});
afterAll(async () => {
  await Promise.all([app?.close(), other?.close()]);
});

async function createSale(payload: object): Promise<string> {
  const created = await app.inject({
    method: 'POST',
    url: '/api/sales',
    headers: bearer('admin', { admin: true }),
    payload: { stock: 5, ...payload },
  });
  expect(created.statusCode, created.body).toBe(201);
  return String(created.json().id);
}

async function admissionOf(saleId: string, user: string): Promise<string> {
  const room = `/api/sales/${saleId}/room`;
  const joined = await app.inject({ method: 'POST', url: `${room}/tickets`, headers: bearer(user) });
  expect(joined.statusCode, joined.body).toBe(201);
  let standing = joined.json();
  for (let i = 0; standing.state !== 'admitted'; i++) {
    expect(i).toBeLessThan(1000);
    await sleep(20); // how often this client asks
    const asked = await app.inject({
      method: 'POST',
      url: `${room}/check`,
      headers: bearer(user),
      payload: { ticket: standing.ticket },
    });
    expect(asked.statusCode, asked.body).toBe(200);
    standing = asked.json();
  }
  return standing.admission as string;
}

const headerOf = (jwt: string) =>
  JSON.parse(Buffer.from(jwt.split('.')[0]!, 'base64url').toString()) as Record<string, unknown>;

describe('one signing key for the service', () => {
  it('publishes the raffle key in the JWKS, and admissions and receipts name it by one kid', async () => {
    const roomSale = await createSale({
      name: 'room sale',
      room: { ratePerSec: 1000, noticeSeconds: 0, shuffleSeconds: 1 },
    });
    const raffleSale = await createSale({ name: 'raffle sale', admission: 'raffle' });
    const admission = await admissionOf(roomSale, 'ann');
    const entered = await app.inject({
      method: 'POST',
      url: `/api/sales/${raffleSale}/raffle/entries`,
      headers: bearer('ann'),
    });
    expect(entered.statusCode, entered.body).toBe(202);
    const receipt = entered.json().receipt as Signed<unknown>;

    const raffleKey = (await app.inject({ method: 'GET', url: '/.well-known/lockstock/raffle-key' })).json();
    const jwks = (await app.inject({ method: 'GET', url: '/.well-known/jwks.json' })).json() as Jwks;
    const kid = jwkThumbprint(raffleKey.publicKey);
    expect(raffleKey).toEqual({
      algorithm: 'Ed25519',
      kid,
      keyId: keyIdOf(raffleKey.publicKey), // the old id, kept
      publicKey: expect.stringMatching(/^[A-Za-z0-9_-]{43}$/),
    });
    expect(jwks.keys).toEqual([
      { kty: 'OKP', crv: 'Ed25519', x: raffleKey.publicKey, kid, use: 'sig', alg: 'EdDSA' },
    ]);
    expect(headerOf(admission).kid).toBe(kid);
    expect(receipt).toMatchObject({ kid, publicKey: raffleKey.publicKey });
    expect(receipt).not.toHaveProperty('keyId');
    expect(verifyAdmission(admission, jwks, { saleId: roomSale, userId: 'ann' })).toMatchObject({ ok: true });

    // Another process on the record, with another JWT secret: the same key, published the same,
    // and it accepts the first one's admission (the purchase is sold).
    expect((await other.inject({ method: 'GET', url: '/.well-known/jwks.json' })).json()).toEqual(jwks);
    const bought = await other.inject({
      method: 'POST',
      url: `/api/sales/${roomSale}/orders`,
      headers: { ...bearer('ann', { secret: OTHER_SECRET }), admission },
    });
    expect(bought.statusCode, bought.body).toBe(202);
  });

  it('verifies documents signed before kid (keyId) as it verifies new ones; a wrong id fails', async () => {
    const saleId = await createSale({ name: 'raffle of old documents', admission: 'raffle' });
    const entered = await app.inject({
      method: 'POST',
      url: `/api/sales/${saleId}/raffle/entries`,
      headers: bearer('bob'),
    });
    const receipt = entered.json().receipt;
    const drawn = await app.inject({
      method: 'POST',
      url: `/api/sales/${saleId}/raffle/draw`,
      headers: bearer('admin', { admin: true }),
    });
    expect(drawn.json().result).toBe('drawn');
    const published = (
      await app.inject({ method: 'GET', url: `/api/sales/${saleId}/raffle/entries` })
    ).json() as PublishedRaffle;
    expect(published.close).toHaveProperty('kid', receipt.kid);

    const legacy = <T extends Signed<unknown>>({ kid: _kid, ...doc }: T) => ({
      ...doc,
      keyId: keyIdOf(doc.publicKey),
    });
    const oldReceipt = legacy(receipt);
    const oldPublished = { ...published, close: legacy(published.close!) };
    expect(signatureHolds(oldReceipt, 'lockstock.raffle.entry.v1')).toBe(true);
    // The same checks pass and fail (the winners are not served here: the verdict is not ok), and
    // the signatures hold under either id.
    const checks = (p: PublishedRaffle, r: typeof receipt) => verifyRaffle(p, { receipt: r }).checks;
    const oldChecks = checks(oldPublished as PublishedRaffle, oldReceipt);
    expect(oldChecks.map((c) => c.ok)).toEqual(checks(published, receipt).map((c) => c.ok));
    expect(oldChecks.filter((c) => c.ok).map((c) => c.line)).toEqual(
      expect.arrayContaining([
        expect.stringContaining(`signed by key ${oldReceipt.keyId}`),
        `the close statement is signed by the same key (${oldReceipt.keyId})`,
      ]),
    );
    expect(
      checks(published, receipt)
        .filter((c) => c.ok)
        .map((c) => c.line),
    ).toEqual(
      expect.arrayContaining([
        expect.stringContaining(`signed by key ${receipt.kid}`),
        `the close statement is signed by the same key (${receipt.kid})`,
      ]),
    );

    // An id that is not the key's, or none at all: not a signed document.
    expect(
      signatureHolds({ ...receipt, kid: jwkThumbprint('A'.repeat(43)) }, 'lockstock.raffle.entry.v1'),
    ).toBe(false);
    expect(signatureHolds({ ...oldReceipt, keyId: '0'.repeat(32) }, 'lockstock.raffle.entry.v1')).toBe(false);
    expect(signatureHolds({ ...receipt, kid: undefined }, 'lockstock.raffle.entry.v1')).toBe(false);
  });
});
