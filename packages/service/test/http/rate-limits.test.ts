import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AddressLimiter } from '../../src/http/address-limit.js';
import { buildApp } from '../../src/http/app.js';
import { signToken } from '../../src/http/auth.js';
import { saleKeys } from '../../src/sale/keys.js';
import { useSaleStack } from '../helpers/sale.js';

/**
 * The rate limits as shipped (issue 49): per user and sale, counted by the reservation script itself
 * and so shared exactly by every process; per address, counted in each process and reconciled through
 * Redis (AddressLimiter's bound). Two apps on one Redis stand for two server processes.
 */
const env = useSaleStack();
const SECRET = 'test-secret-0123456789abcdef';
const bearer = (user: string) => ({ authorization: `Bearer ${signToken(SECRET, user)}` });
let apps: FastifyInstance[] = [];

beforeAll(async () => {
  apps = await Promise.all(
    [0, 1].map(() =>
      buildApp({
        service: env.service,
        context: env.context,
        db: env.db,
        metrics: env.metrics,
        config: { jwtSecret: SECRET, rateLimitPerUser: 2, rateLimitPerIp: 0 },
      }),
    ),
  );
});
afterAll(async () => {
  await Promise.all(apps.map((app) => app.close()));
});

/** What a refused attempt could have changed of a sale. */
async function saleState(saleId: string, userId: string) {
  const keys = saleKeys(saleId);
  return {
    stock: await env.redis.get(keys.stock),
    stream: await env.redis.xlen(keys.stream),
    held: await env.redis.hget(keys.buyers, userId),
  };
}

/**
 * Runs `attempt` with a fresh user until the user's attempt counter saw all `attempts` in one window
 * (it did not expire midway on a slow machine), and returns that attempt's answers.
 */
async function inOneWindow<T>(saleId: string, attempts: number, attempt: (user: string) => Promise<T>) {
  for (let i = 0; i < 5; i++) {
    const user = `u${Date.now().toString(36)}x${i}`;
    const answers = await attempt(user);
    if (Number(await env.redis.get(saleKeys(saleId).userRate(user))) === attempts) return answers;
  }
  throw new Error(`the per-user counter never saw ${attempts} attempts in one window`);
}

describe('per-user rate limit (in the reservation round trip)', () => {
  it('is shared by every process: the third attempt in a second is refused wherever it lands, and changes nothing', async () => {
    const sale = await env.service.createSale({ name: 'rl shared', stock: 100, perUserLimit: 10 });
    const url = `/api/sales/${sale.id}/orders`;
    const [a, b] = apps as [FastifyInstance, FastifyInstance];
    const answers = await inOneWindow(sale.id, 3, async (user) => {
      const first = await a.inject({ method: 'POST', url, headers: bearer(user), payload: {} });
      const second = await a.inject({ method: 'POST', url, headers: bearer(user), payload: {} });
      const before = await saleState(sale.id, user);
      const third = await b.inject({ method: 'POST', url, headers: bearer(user), payload: {} });
      return { statuses: [first.statusCode, second.statusCode, third.statusCode], third, before, user };
    });
    expect(answers.statuses).toEqual([202, 202, 429]);
    expect(answers.third.json()).toEqual({ error: 'rate_limited', message: expect.any(String) });
    expect(Number(answers.third.headers['retry-after'])).toBeGreaterThanOrEqual(1);
    // The refused attempt reserved nothing: stock, stream and the buyer's holding as before it.
    expect(await saleState(sale.id, answers.user)).toEqual(answers.before);
    expect(answers.before.held).toBe('2');
  });

  it('counts attempts with an Idempotency-Key and waitlist joins on the same counter', async () => {
    const sale = await env.service.createSale({ name: 'rl paths', stock: 100, perUserLimit: 10 });
    const url = `/api/sales/${sale.id}/orders`;
    const [a, b] = apps as [FastifyInstance, FastifyInstance];
    const statuses = await inOneWindow(sale.id, 3, async (user) => {
      const headers = (key: string) => ({ ...bearer(user), 'idempotency-key': key });
      const first = await a.inject({ method: 'POST', url, headers: headers('k1'), payload: {} });
      const second = await b.inject({ method: 'POST', url, headers: headers('k2'), payload: {} });
      const join = await a.inject({
        method: 'POST',
        url: `/api/sales/${sale.id}/waitlist`,
        headers: bearer(user),
      });
      return [first.statusCode, second.statusCode, join.statusCode];
    });
    expect(statuses).toEqual([202, 202, 429]);
  });
});

describe('per-address rate limit (in memory, reconciled)', () => {
  /** Two processes' limiters on one Redis, on a clock the test holds still (one window throughout). */
  function twoProcesses(max: number) {
    let now = Date.UTC(2026, 0, 1, 12, 0, 0, 100) + Math.floor(Math.random() * 1e6) * 1000;
    const clock = { now: () => now, advance: (ms: number) => (now += ms) };
    const limiter = () =>
      new AddressLimiter(env.context.scripts, { max, keyPrefix: env.context.prefix, now: clock.now });
    return { a: limiter(), b: limiter(), clock };
  }
  const admitted = (limiter: AddressLimiter, address: string, requests: number) =>
    Array.from({ length: requests }, () => limiter.admit(address)).filter(Boolean).length;

  it('refuses past the limit within one process, and admits again in the next window', () => {
    const { a, clock } = twoProcesses(5);
    expect(admitted(a, '10.0.0.1', 8)).toBe(5);
    expect(admitted(a, '10.0.0.2', 1)).toBe(1); // another address has its own count
    clock.advance(1000);
    expect(admitted(a, '10.0.0.1', 8)).toBe(5);
  });

  it('shares the count across processes within the documented bound', async () => {
    const { a, b } = twoProcesses(5);
    const address = '10.0.0.3';
    expect(admitted(a, address, 5)).toBe(5);
    await a.sync();
    // B has not reconciled yet: it admits what it cannot know about (the bound: max + what the
    // others admit within one reconciliation interval) ...
    expect(admitted(b, address, 1)).toBe(1);
    await b.sync();
    // ... and once it has, it refuses like A does: 6 admitted in the window in all, not 10.
    expect(admitted(b, address, 5)).toBe(0);
    await a.sync();
    expect(admitted(a, address, 5)).toBe(0);
    const key = (await env.redis.keys(`${env.context.prefix}:rl:ip:${address}:*`))[0] as string;
    expect(await env.redis.get(key)).toBe('6');
  });

  it('keeps limiting alone while Redis cannot be reached (each process at most the limit)', async () => {
    const broken = { run: () => Promise.reject(new Error('connection is closed')) };
    let errors = 0;
    const limiter = new AddressLimiter(broken as unknown as typeof env.context.scripts, {
      max: 3,
      keyPrefix: env.context.prefix,
      now: () => 1_700_000_000_500,
      onSyncError: () => errors++,
    });
    expect(admitted(limiter, '10.0.0.4', 3)).toBe(3);
    await limiter.sync();
    expect(errors).toBe(1);
    expect(admitted(limiter, '10.0.0.4', 3)).toBe(0);
  });
});
