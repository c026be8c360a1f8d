import { createPublicKey, verify, type JsonWebKeyInput } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildApp } from '../../src/http/app.js';
import { signToken } from '../../src/http/auth.js';
import type { HttpConfig } from '../../src/http/config.js';
import { saleKeys } from '../../src/sale/keys.js';
import { roomKeys } from '../../src/sale/room/keys.js';
import { leadingZeroBits, powHash, solveChallenge } from '../../src/sale/room/pow.js';
import { AdmissionKeys, verifyAdmission, type Jwks } from '../../src/sale/room/admission-token.js';
import { RoomSigner } from '../../src/sale/room/signed.js';
import { generateServiceKey, loadServiceKey } from '../../src/sale/store/signing-key.js';
import { SaleService } from '../../src/sale/service.js';
import { useSaleStack } from '../helpers/sale.js';
import { until } from '../helpers/until.js';

const env = useSaleStack();
const SECRET = 'room-secret-0123456789abcdef';
const config: HttpConfig = { jwtSecret: SECRET, rateLimitPerUser: 0, rateLimitPerIp: 0 };
let app: FastifyInstance;

const bearer = (user: string, admin = false) => ({
  authorization: `Bearer ${signToken(SECRET, user, { admin })}`,
});

beforeAll(async () => {
  app = await buildApp({
    service: env.service,
    context: env.context,
    db: env.db,
    metrics: env.metrics,
    config,
  });
});
afterAll(async () => {
  await app.close();
});

async function createSale(
  room: Record<string, number> | undefined,
  stock = 20,
  sale: Record<string, number> = {},
): Promise<string> {
  const created = await app.inject({
    method: 'POST',
    url: '/api/sales',
    headers: bearer('admin', true),
    payload: { name: 'room sale', stock, ...sale, ...(room ? { room } : {}) },
  });
  expect(created.statusCode, created.body).toBe(201);
  return String(created.json().id);
}

const buy = (target: FastifyInstance, saleId: string, user: string, admission?: string) =>
  target.inject({
    method: 'POST',
    url: `/api/sales/${saleId}/orders`,
    headers: { ...bearer(user), ...(admission ? { admission } : {}) },
  });

const join = (saleId: string, user: string, payload?: object) =>
  app.inject({
    method: 'POST',
    url: `/api/sales/${saleId}/room/tickets`,
    headers: bearer(user),
    ...(payload ? { payload } : {}),
  });

const check = (saleId: string, user: string, ticket: string) =>
  app.inject({
    method: 'POST',
    url: `/api/sales/${saleId}/room/check`,
    headers: bearer(user),
    payload: { ticket },
  });

/** Asks with the ticket until admitted (1000/s, from the end of the 1 s shuffle window). */
async function admissionOf(saleId: string, user: string): Promise<string> {
  const joined = await join(saleId, user);
  expect(joined.statusCode, joined.body).toBe(201);
  let standing = joined.json();
  for (let i = 0; standing.state !== 'admitted'; i++) {
    expect(i).toBeLessThan(1000);
    await sleep(20); // how often this client asks
    const asked = await check(saleId, user, standing.ticket);
    expect(asked.statusCode, asked.body).toBe(200);
    standing = asked.json();
  }
  return standing.admission as string;
}

async function orderCount(saleId: string) {
  return {
    stream: await env.redis.xlen(saleKeys(saleId).stream),
    stock: await env.redis.get(saleKeys(saleId).stock),
  };
}

describe('waiting room (HTTP)', () => {
  it('refuses a purchase without a valid admission, and sells to an admitted buyer', async () => {
    const saleId = await createSale({ ratePerSec: 1000, noticeSeconds: 0, shuffleSeconds: 1 });
    const shown = await app.inject({ method: 'GET', url: `/api/sales/${saleId}` });
    expect(shown.json().room).toEqual({
      ratePerSec: 1000,
      powBits: 0,
      ticketSeconds: 3600,
      admissionSeconds: 300,
      shuffleSeconds: 1,
      noticeSeconds: 0,
      maxActive: 0,
      maxBacklog: 0,
    });
    const before = await orderCount(saleId);

    const bypass = await buy(app, saleId, 'ann');
    expect(bypass.statusCode).toBe(403);
    expect(bypass.json()).toEqual({ error: 'admission_required', message: expect.any(String) });
    const forged = await buy(app, saleId, 'ann', 'e30.bm90LWEtbWFj');
    expect(forged.json().error).toBe('admission_invalid');

    const annAdmission = await admissionOf(saleId, 'ann');
    // Ann's admission is hers: Bob cannot buy with it, nor buy in another sale.
    expect((await buy(app, saleId, 'bob', annAdmission)).json().error).toBe('admission_invalid');
    const other = await createSale({ ratePerSec: 1000, noticeSeconds: 0, shuffleSeconds: 1 });
    expect((await buy(app, other, 'ann', annAdmission)).json().error).toBe('admission_invalid');
    // A bearer token is not an admission either.
    const token = signToken(SECRET, 'ann');
    expect((await buy(app, saleId, 'ann', token)).json().error).toBe('admission_invalid');
    expect(await orderCount(saleId)).toEqual(before); // refused requests changed nothing

    const bought = await buy(app, saleId, 'ann', annAdmission);
    expect(bought.statusCode, bought.body).toBe(202);
    expect((await orderCount(saleId)).stream).toBe(before.stream + 1);

    const stats = await app.inject({ method: 'GET', url: `/api/sales/${saleId}/room` });
    expect(stats.json()).toMatchObject({ ratePerSec: 1000, admitted: 1, joined: 1, waiting: 0 });
  });

  it('binds tickets and admissions to their buyer and refuses them once expired', async () => {
    const saleId = await createSale({ ratePerSec: 0.001 }); // ~17 minutes per buyer: both wait
    const first = await join(saleId, 'cat');
    const second = await join(saleId, 'dan');
    expect([first.statusCode, second.statusCode]).toEqual([201, 201]);
    const dan = second.json();
    // Cat and Dan joined in one shuffle window: their order is random.
    expect(dan).toMatchObject({ state: 'waiting', position: expect.any(Number) });
    expect([1, 2]).toContain(dan.position);
    expect(dan.estimatedWaitSeconds).toBe(dan.position * 1000);
    // Joining again keeps one's place (one ticket per buyer, not a new place per request).
    expect((await join(saleId, 'dan')).json()).toMatchObject({ state: 'waiting', position: dan.position });
    expect((await check(saleId, 'dan', dan.ticket)).json()).toMatchObject({ position: dan.position });

    const stolen = await check(saleId, 'eve', dan.ticket);
    expect(stolen.statusCode).toBe(403);
    expect(stolen.json().error).toBe('ticket_invalid');

    const signer = new RoomSigner(SECRET);
    const expiredTicket = signer.sign('ticket', { s: saleId, u: 'dan', q: '0.5', exp: Date.now() - 1 });
    const late = await check(saleId, 'dan', expiredTicket);
    expect(late.statusCode).toBe(410);
    expect(late.json().error).toBe('ticket_expired');
    // Signed with another secret, or as another kind of token: not a ticket.
    const foreign = new RoomSigner('another-secret-0123456789').sign('ticket', {
      s: saleId,
      u: 'dan',
      q: '0',
      exp: Date.now() + 60_000,
    });
    expect((await check(saleId, 'dan', foreign)).json().error).toBe('ticket_invalid');
    // An admission is judged in the reservation, against the room's record in Redis and on the Redis
    // clock: one made long ago has lapsed; one still in its notice period is not valid yet (learning
    // of it sooner buys nothing sooner); one the record does not hold (replaced, or never made) is not
    // this buyer's to spend. Each is signed here, so only Redis can tell.
    const [seconds] = await env.redis.time();
    const redisNow = Number(seconds) * 1000;
    const keys = new AdmissionKeys(await loadServiceKey(env.db)); // the service's key, from the record
    const signed = (at: number) => keys.sign({ saleId, userId: 'dan', at, validFrom: at, expiresAt: at + 1 });
    const admissionAt = async (at: number) => {
      await env.redis.hset(roomKeys(saleId).admitted, 'dan', at);
      return signed(at);
    };
    const lapsed = await admissionAt(redisNow - 3_600_000);
    expect((await buy(app, saleId, 'dan', lapsed)).json().error).toBe('admission_expired');
    const early = await admissionAt(redisNow + 60_000);
    expect((await buy(app, saleId, 'dan', early)).json().error).toBe('admission_not_yet');
    expect((await buy(app, saleId, 'dan', signed(redisNow - 1000))).json().error).toBe('admission_used');
    // Signed with another key, or an HMAC token of the room's own: not an admission.
    const foreignKey = new AdmissionKeys(generateServiceKey());
    const alien = foreignKey.sign({
      saleId,
      userId: 'dan',
      at: redisNow,
      validFrom: redisNow,
      expiresAt: redisNow,
    });
    expect((await buy(app, saleId, 'dan', alien)).json().error).toBe('admission_invalid');
    expect(await orderCount(saleId)).toEqual({ stream: 0, stock: '20' });
    const wrongKind = signer.sign('ticket', { s: saleId, u: 'dan', exp: Date.now() + 60_000 });
    expect((await buy(app, saleId, 'dan', wrongKind)).json().error).toBe('admission_invalid');
  });

  it('admissions are Ed25519 JWTs another service checks with the published key set alone', async () => {
    const saleId = await createSale({ ratePerSec: 1000, noticeSeconds: 0, shuffleSeconds: 1 });
    const admission = await admissionOf(saleId, 'oli');
    const published = await app.inject({ method: 'GET', url: '/.well-known/jwks.json' });
    expect(published.statusCode).toBe(200);
    const jwks = published.json() as Jwks;
    expect(jwks.keys).toEqual([
      {
        kty: 'OKP',
        crv: 'Ed25519',
        x: expect.any(String),
        kid: expect.any(String),
        use: 'sig',
        alg: 'EdDSA',
      },
    ]);
    // A standard compact JWS: header.claims.signature, checked here with node:crypto from the JWK.
    const [header, claims, signature] = admission.split('.') as [string, string, string];
    const key = createPublicKey({ key: jwks.keys[0] as object, format: 'jwk' } as JsonWebKeyInput);
    expect(verify(null, Buffer.from(`${header}.${claims}`), key, Buffer.from(signature, 'base64url'))).toBe(
      true,
    );
    expect(JSON.parse(Buffer.from(header, 'base64url').toString())).toEqual({
      alg: 'EdDSA',
      typ: 'JWT',
      kid: jwks.keys[0]?.kid,
    });
    // The verifier another service runs: for this buyer and sale, within its window.
    const checked = verifyAdmission(admission, jwks, { saleId, userId: 'oli' });
    expect(checked).toMatchObject({ ok: true, claims: { sub: 'oli', aud: `lockstock:sale:${saleId}` } });
    expect(verifyAdmission(admission, jwks, { saleId, userId: 'pat' })).toMatchObject({ ok: false });
    expect(verifyAdmission(admission, jwks, { saleId: '999999', userId: 'oli' })).toMatchObject({
      ok: false,
    });
    const later = Date.now() + 3_600_000;
    expect(verifyAdmission(admission, jwks, { saleId, userId: 'oli', now: later })).toEqual({
      ok: false,
      reason: 'expired',
    });
    // One byte of the claims changed (another buyer named): the signature no longer holds.
    const forgedClaims = Buffer.from(
      Buffer.from(claims, 'base64url').toString().replace('"sub":"oli"', '"sub":"pat"'),
    ).toString('base64url');
    const forged = `${header}.${forgedClaims}.${signature}`;
    expect(verifyAdmission(forged, jwks, { saleId, userId: 'pat' })).toEqual({
      ok: false,
      reason: 'bad signature',
    });
    expect((await buy(app, saleId, 'pat', forged)).json().error).toBe('admission_invalid');
    const other = new AdmissionKeys(generateServiceKey()).jwks;
    expect(verifyAdmission(admission, other, { saleId, userId: 'oli' })).toMatchObject({ ok: false });
  });

  it('one admission buys one order, however many purchases race with it; a keyed retry still gets its order', async () => {
    // A generous per-user limit: only the admission stands between a buyer and a second order.
    const saleId = await createSale({ ratePerSec: 1000, noticeSeconds: 0, shuffleSeconds: 1 }, 20, {
      perUserLimit: 10,
    });
    const hal = await admissionOf(saleId, 'hal');
    const racing = Array.from({ length: 12 }, (_, i) =>
      i % 2 === 0
        ? buy(app, saleId, 'hal', hal)
        : app.inject({
            method: 'POST',
            url: `/api/sales/${saleId}/orders`,
            headers: { ...bearer('hal'), admission: hal, 'idempotency-key': `race-${i}` },
          }),
    );
    const answers = await Promise.all(racing);
    expect(answers.filter((a) => a.statusCode === 202)).toHaveLength(1);
    for (const refused of answers.filter((a) => a.statusCode !== 202)) {
      expect([refused.statusCode, refused.json().error]).toEqual([403, 'admission_used']);
    }
    // From the stream (what the pipeline records): one order, Hal's.
    const entries = await env.redis.xrange(saleKeys(saleId).stream, '-', '+');
    expect(entries.map(([, fields]) => fields[fields.indexOf('user') + 1])).toEqual(['hal']);

    // Ivy buys with a key; her retries get that order back after the admission is spent, and after
    // it has lapsed (judged on the Redis clock); a new key does not buy again.
    const ivy = await admissionOf(saleId, 'ivy');
    const keyed = (key: string) =>
      app.inject({
        method: 'POST',
        url: `/api/sales/${saleId}/orders`,
        headers: { ...bearer('ivy'), admission: ivy, 'idempotency-key': key },
      });
    const first = await keyed('ivy-1');
    expect(first.statusCode, first.body).toBe(202);
    expect((await keyed('ivy-1')).json()).toEqual(first.json());
    // Every admission of the room lapses now (on the Redis clock: an admission lasts admitMs).
    await env.redis.hset(roomKeys(saleId).config, 'admitMs', 1);
    expect((await keyed('ivy-1')).json()).toEqual(first.json());
    expect((await keyed('ivy-2')).json().error).toBe('admission_used');
    expect(await env.redis.xlen(saleKeys(saleId).stream)).toBe(2);
    // Asking the room again says the admission is spent; joining again queues Ivy anew.
    const standing = await join(saleId, 'ivy');
    expect(standing.statusCode, standing.body).toBe(201);
  });

  it('a split sale spends the admission before the reservation and gives it back on a refusal', async () => {
    const saleId = await createSale({ ratePerSec: 1000, noticeSeconds: 0, shuffleSeconds: 1 }, 2, {
      shards: 2,
      perUserLimit: 10,
    });
    const tom = await admissionOf(saleId, 'tom');
    // More than the stock: refused, and the admission is given back (then buys what is there).
    const tooMany = await app.inject({
      method: 'POST',
      url: `/api/sales/${saleId}/orders`,
      headers: { ...bearer('tom'), admission: tom },
      payload: { quantity: 3 },
    });
    expect([tooMany.statusCode, tooMany.json().error]).toEqual([409, 'sold_out']);
    const answers = await Promise.all(Array.from({ length: 6 }, () => buy(app, saleId, 'tom', tom)));
    expect(answers.filter((a) => a.statusCode === 202)).toHaveLength(1);
    expect(answers.filter((a) => a.statusCode !== 202).map((a) => a.json().error)).toEqual(
      Array(5).fill('admission_used'),
    );
    const stats = (await app.inject({ method: 'GET', url: `/api/sales/${saleId}` })).json();
    expect(stats).toMatchObject({ shards: 2, remaining: 1, sold: 1 });
  });

  it('admits no more active buyers than its cap; a purchase frees a slot; a paused room admits nobody, and stays paused in the record', async () => {
    const saleId = await createSale({ ratePerSec: 1000, noticeSeconds: 0, shuffleSeconds: 1, maxActive: 2 });
    const tickets = new Map<string, string>();
    for (const user of ['ken', 'lea', 'max', 'ned'])
      tickets.set(user, (await join(saleId, user)).json().ticket);
    const standingOf = async (user: string) =>
      (await check(saleId, user, tickets.get(user) as string)).json() as Record<string, string & number>;
    const admitted = async () => Object.keys(await env.redis.hgetall(roomKeys(saleId).admitted)).sort();
    // Past the first shuffle window the pace would admit all four at once: the cap admits two.
    await until(
      'the first window to end and two admitted',
      async () => {
        await standingOf('ken');
        return (await admitted()).length === 2;
      },
      30_000,
    );
    for (const user of ['ken', 'lea', 'max', 'ned']) await standingOf(user);
    const firstTwo = await admitted();
    expect(firstTwo).toHaveLength(2);
    const stats = async () =>
      (await app.inject({ method: 'GET', url: `/api/sales/${saleId}/room` })).json() as Record<
        string,
        number
      >;
    expect(await stats()).toMatchObject({ active: 2, maxActive: 2, waiting: 2, paused: false });

    // One of them buys: its slot is free, and the next in line is admitted.
    const buyer = firstTwo[0] as string;
    const pass = (await standingOf(buyer)).admission;
    expect((await buy(app, saleId, buyer, pass)).statusCode).toBe(202);
    const waiting = ['ken', 'lea', 'max', 'ned'].filter((u) => !firstTwo.includes(u));
    for (const user of waiting) await standingOf(user);
    expect(await admitted()).toHaveLength(3);
    expect(await stats()).toMatchObject({ active: 2, waiting: 1 });

    // Paused: the slot the next purchase frees stays empty until the room is resumed.
    const pause = (action: string, user = 'admin', admin = true) =>
      app.inject({
        method: 'POST',
        url: `/api/sales/${saleId}/room/${action}`,
        headers: bearer(user, admin),
      });
    expect((await pause('pause', 'eve', false)).statusCode).toBe(403);
    const paused = await pause('pause');
    expect(paused.statusCode, paused.body).toBe(200);
    expect(paused.json()).toMatchObject({ paused: true });
    const second = firstTwo[1] as string;
    expect((await buy(app, saleId, second, (await standingOf(second)).admission)).statusCode).toBe(202);
    for (const user of waiting) await standingOf(user);
    expect(await admitted()).toHaveLength(3);
    expect(await stats()).toMatchObject({ active: 1, waiting: 1, paused: true });
    // The switch is in the record: a room Redis lost comes back paused.
    await env.redis.del(roomKeys(saleId).config);
    expect(await env.service.rooms.restore(saleId)).toMatchObject({ maxActive: 2 });
    expect(await env.redis.hget(roomKeys(saleId).config, 'paused')).toBe('1');

    expect((await pause('resume')).json()).toMatchObject({ paused: false });
    for (const user of waiting) await standingOf(user);
    expect(await admitted()).toHaveLength(4);
    expect(await stats()).toMatchObject({ active: 2, waiting: 0 });
  });

  it('paces by the order pipeline: nobody is admitted while its backlog of the sale is over maxBacklog', async () => {
    const saleId = await createSale({ ratePerSec: 1000, noticeSeconds: 0, shuffleSeconds: 1, maxBacklog: 1 });
    // No pipeline runs yet: each purchase stays in the sale's stream, unrecorded.
    for (const user of ['quin', 'rae']) {
      expect((await buy(app, saleId, user, await admissionOf(saleId, user))).statusCode).toBe(202);
    }
    const joined = await join(saleId, 'sam');
    expect(joined.json().state).toBe('waiting');
    for (let i = 0; i < 5; i++) {
      await sleep(20); // how often the client asks; at 1000/s any ask would admit, but for the backlog
      expect((await check(saleId, 'sam', joined.json().ticket)).json().state).toBe('waiting');
    }
    // The pipeline records the two: the backlog is gone, and Sam is admitted at the next ask.
    env.pipeline().start();
    await until('the pipeline to record both orders', async () => {
      const [group] = (await env.redis.xinfo('GROUPS', saleKeys(saleId).stream)) as unknown[][];
      const fields = Object.fromEntries(
        Array.from({ length: (group?.length ?? 0) / 2 }, (_, i) => [group?.[2 * i], group?.[2 * i + 1]]),
      );
      return fields.lag === 0 && fields.pending === 0;
    });
    expect((await check(saleId, 'sam', joined.json().ticket)).json().state).toBe('admitted');
  });

  it('asks for proof of work before a ticket when the room is set so; a challenge buys one place', async () => {
    const saleId = await createSale({ ratePerSec: 1000, powBits: 8 });
    const without = await join(saleId, 'fay');
    expect(without.statusCode).toBe(403);
    expect(without.json().error).toBe('pow_required');

    const issued = await app.inject({
      method: 'POST',
      url: `/api/sales/${saleId}/room/challenges`,
      headers: bearer('fay'),
    });
    expect(issued.statusCode).toBe(201);
    const { challenge, bits } = issued.json() as { challenge: string; bits: number };
    expect(bits).toBe(8);
    const { solution } = solveChallenge(challenge, bits);
    // Another buyer cannot use Fay's challenge, nor anyone a wrong solution.
    expect((await join(saleId, 'gus', { challenge, solution })).json().error).toBe('pow_invalid');
    // A wrong solution: one whose hash does not start with 8 zero bits (most do not; checked).
    let wrongSolution = 0;
    while (leadingZeroBits(powHash(challenge, `w${wrongSolution}`)) >= bits) wrongSolution++;
    const bad = await join(saleId, 'fay', { challenge, solution: `w${wrongSolution}` });
    expect([bad.statusCode, bad.json().error]).toEqual([403, 'pow_invalid']);

    const joined = await join(saleId, 'fay', { challenge, solution });
    expect(joined.statusCode, joined.body).toBe(201);
    const replay = await join(saleId, 'fay', { challenge, solution });
    expect(replay.json()).toMatchObject({ error: 'pow_invalid', message: expect.stringMatching(/used/) });
  });

  it('keeps the room when Redis loses its settings: the record puts them back', async () => {
    const saleId = await createSale({ ratePerSec: 5 });
    await env.redis.del(roomKeys(saleId).config);
    // A process that never saw the sale (a fresh service and app) asks Redis, then the record.
    const service = new SaleService({
      context: env.context,
      db: env.db,
      nextOrderId: () => '1',
      soldOutCache: false,
    });
    const fresh = await buildApp({ service, context: env.context, db: env.db, metrics: env.metrics, config });
    try {
      const bypass = await buy(fresh, saleId, 'hal');
      expect(bypass.json().error).toBe('admission_required');
      expect(await env.redis.hget(roomKeys(saleId).config, 'rate')).toBe('5');
      // A sale without a room sells as before; a sale that does not exist is not found.
      const plain = await createSale(undefined);
      expect((await buy(fresh, plain, 'hal')).statusCode).toBe(202);
      expect((await buy(fresh, '999999999', 'hal')).json().error).toBe('not_found');
    } finally {
      await fresh.close();
      await service.close();
    }
  });

  it('refuses bad room settings and changes nothing', async () => {
    for (const room of [{ ratePerSec: 0 }, { ratePerSec: 5, powBits: 40 }, { ratePerSec: 5, extra: 1 }]) {
      const refused = await app.inject({
        method: 'POST',
        url: '/api/sales',
        headers: bearer('admin', true),
        payload: { name: 'bad room', stock: 1, room },
      });
      expect(refused.statusCode).toBe(400);
      expect(refused.json().error).toBe('bad_request');
    }
    const raffleWithRoom = await app.inject({
      method: 'POST',
      url: '/api/sales',
      headers: bearer('admin', true),
      payload: { name: 'raffle with a room', stock: 1, admission: 'raffle', room: { ratePerSec: 5 } },
    });
    expect([raffleWithRoom.statusCode, raffleWithRoom.json().error]).toEqual([400, 'bad_request']);
    // A split sale's orders go to its parts' streams, which the room does not watch: pacing it by
    // the pipeline's backlog would do nothing, so it is refused (and nothing is recorded).
    const newest = async () =>
      (await app.inject({ method: 'GET', url: '/api/sales?limit=1' })).json().sales[0]?.id as unknown;
    const before = await newest();
    const splitPaced = await app.inject({
      method: 'POST',
      url: '/api/sales',
      headers: bearer('admin', true),
      payload: { name: 'split, paced', stock: 4, shards: 2, room: { ratePerSec: 5, maxBacklog: 10 } },
    });
    expect([splitPaced.statusCode, splitPaced.json().error]).toEqual([400, 'bad_request']);
    expect(splitPaced.json().message).toMatch(/maxBacklog cannot pace a split sale/);
    expect(await newest()).toBe(before);
    const noRoom = await createSale(undefined);
    const stats = await app.inject({ method: 'GET', url: `/api/sales/${noRoom}/room` });
    expect([stats.statusCode, stats.json().error]).toEqual([404, 'no_room']);
  });
});
