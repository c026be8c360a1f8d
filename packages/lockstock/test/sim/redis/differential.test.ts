import { setTimeout as sleep } from 'node:timers/promises';
import { RedisServer } from '@lockstock/servers';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runSchedule, type SimKind } from '../run.js';
import { toIoredis } from './connection.js';
import { EPOCH_MS, RedisError, RedisModel } from './model.js';
import { SimRedisServer } from './server.js';
import { longTier } from '../../helpers/tier.js';
import { REDIS_SIM_KINDS, redisWorld } from './world.js';

/**
 * What makes the simulated Redis trustworthy: the commands the real adapter sent in a simulated
 * schedule (every EVALSHA/EVAL of the shipped scripts, NOSCRIPT fallbacks included, and its direct
 * reads) are replayed, in the order the simulated server ran them, on a real redis-server and on a
 * fresh model, and every reply and the whole keyspace after each command must agree.
 *
 * The model runs at the real server's time: before each command it reads Redis's TIME and sets its
 * clock to it, so leases, deadlines and PTTLs line up to what a round trip takes (up to 100 ms allowed, for a loaded machine)
 * (numbers that are times or durations are compared within that slack; tokens and counts exactly).
 * Where the schedule let time pass, the replay sleeps too (up to 400 ms), so leases do run out and
 * the expiry paths of the scripts are compared as well — never to within 150 ms of any expiry or
 * deadline, where a loaded machine could put the two servers on either side of it.
 */
const GAP_CAP_MS = 400;
const EDGE_MS = 150;
/** How far apart the two servers' readings of one time may be: a round trip on a loaded machine. */
const SLACK_MS = 100;

let server: RedisServer;
let redis: Redis;

beforeAll(async () => {
  server = await RedisServer.start();
  redis = new Redis(server.url);
});
afterAll(async () => {
  redis.disconnect();
  await server.stop();
});

/** Redis's time, ms (with µs). */
async function redisNow(): Promise<number> {
  const [s, us] = (await redis.call('time')) as [string, string];
  return Number(s) * 1000 + Number(us) / 1000;
}

/** The real server's keyspace in the model's dump() shape. */
async function dumpReal(): Promise<Array<[string, string, unknown, number]>> {
  const keys = ((await redis.keys('*')) as string[]).sort();
  const out: Array<[string, string, unknown, number]> = [];
  for (const key of keys) {
    const type = await redis.type(key);
    let value: unknown;
    if (type === 'string') value = await redis.get(key);
    else if (type === 'hash') {
      value = Object.entries(await redis.hgetall(key)).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    } else if (type === 'zset') {
      const flat = (await redis.call('zrange', key, 0, -1, 'WITHSCORES')) as string[];
      const pairs: Array<[string, string]> = [];
      for (let i = 0; i < flat.length; i += 2) pairs.push([flat[i]!, flat[i + 1]!]);
      value = pairs;
    } else value = `(${type})`;
    out.push([key, type, value, await redis.pttl(key)]);
  }
  return out;
}

/** Numbers that are times (µs or ms since the epoch) or durations agree within a round trip's slack. */
function close(a: number, b: number): boolean {
  if (a === b) return true;
  const size = Math.max(Math.abs(a), Math.abs(b));
  if (size >= 1e14) return Math.abs(a - b) <= 30_000; // µs timestamps
  if (size >= 100) return Math.abs(a - b) <= SLACK_MS; // ms timestamps, leases, PTTLs
  return false; // tokens, counts, codes: exact
}

/** Deep comparison with `close` for numbers and for the numeric words of strings. */
function agree(a: unknown, b: unknown): boolean {
  if (typeof a === 'number' && typeof b === 'number') return close(a, b);
  if (typeof a === 'string' && typeof b === 'string') {
    if (a === b) return true;
    const x = a.split(' ');
    const y = b.split(' ');
    return (
      x.length === y.length &&
      x.every(
        (w, i) =>
          w === y[i] || (/^-?\d+$/.test(w) && /^-?\d+$/.test(y[i]!) && close(Number(w), Number(y[i]))),
      )
    );
  }
  if (Array.isArray(a) && Array.isArray(b)) return a.length === b.length && a.every((v, i) => agree(v, b[i]));
  if (a !== null && b !== null && typeof a === 'object' && typeof b === 'object')
    return JSON.stringify(a) === JSON.stringify(b);
  return a === b;
}

/**
 * Two keyspaces agree: the same keys, types and values (`agree`), and PTTLs within a round trip's
 * slack whatever their size (a lease 98 ms from its end on one server may be 99 ms on the other),
 * both persistent (-1) or both expiring.
 */
function sameKeyspace(
  a: ReadonlyArray<readonly [string, string, unknown, number]>,
  b: ReadonlyArray<readonly [string, string, unknown, number]>,
): boolean {
  return (
    a.length === b.length &&
    a.every(([key, type, value, pttl], i) => {
      const [keyB, typeB, valueB, pttlB] = b[i]!;
      const ttlAgrees = pttl < 0 || pttlB < 0 ? pttl === pttlB : Math.abs(pttl - pttlB) <= SLACK_MS;
      return key === keyB && type === typeB && agree(value, valueB) && ttlAgrees;
    })
  );
}

/** The first word of an error reply ("NOSCRIPT", "ERR", "LOCKSTOCK_PERMITS"...), or the reply. */
async function outcome(run: () => Promise<unknown> | unknown): Promise<unknown> {
  try {
    return await run();
  } catch (error) {
    if (error instanceof Error && (error.name === 'ReplyError' || error instanceof RedisError))
      return { error: error.message.split(' ')[0] };
    throw error;
  }
}

/** The ms timestamps in the model's keyspace (expiries, deadlines, lease ends) near which no replay step may run. */
function edges(model: RedisModel): number[] {
  const now = model.nowMs();
  const out: number[] = [];
  for (const [, , value, pttl] of model.dump()) {
    if (pttl >= 0) out.push(now + pttl);
    for (const word of JSON.stringify(value).match(/\d{13}/g) ?? []) out.push(Number(word));
  }
  return out;
}

async function replay(kind: SimKind, seed: number): Promise<{ commands: number; scripts: Set<string> }> {
  let simulated: SimRedisServer | undefined;
  const world = redisWorld();
  await runSchedule({
    kind,
    seed,
    world: (sim) => {
      const made = world(sim);
      simulated = made.server;
      return made;
    },
  });
  const log = simulated!.log;
  await redis.flushall();
  await redis.script('FLUSH');
  let realNow = await redisNow();
  const twin = new SimRedisServer(() => realNow - EPOCH_MS);
  const scripts = new Set<string>();
  for (const [i, { at, name, args }] of log.entries()) {
    const gap = i === 0 ? 0 : Math.min(GAP_CAP_MS, at - log[i - 1]!.at);
    if (gap > 5) {
      // Let that much time pass, moved off any edge within EDGE_MS of where it would end.
      let wait = gap;
      const nowMs = twin.model.nowMs();
      for (const edge of edges(twin.model).sort((x, y) => x - y)) {
        const end = nowMs + wait;
        if (Math.abs(edge - end) < EDGE_MS) wait = edge - nowMs + EDGE_MS;
      }
      await sleep(wait);
    }
    realNow = await redisNow();
    if (name === 'evalsha' || name === 'eval')
      scripts.add(name === 'eval' ? args[0]!.slice(0, 80) : args[0]!);
    const expected = await outcome(() => redis.call(name, ...args));
    const modelled = await outcome(() => toIoredis(twin.execute(name, args)));
    const step = `step ${i} of ${kind} seed ${seed}: ${name} ${args
      .slice(name === 'eval' ? 1 : 0)
      .join(' ')
      .slice(0, 300)}`;
    expect(
      agree(modelled, expected),
      `${step}\n  redis: ${JSON.stringify(expected)}\n  model: ${JSON.stringify(modelled)}`,
    ).toBe(true);
    realNow = await redisNow();
    const [real, model] = [await dumpReal(), twin.model.dump()];
    expect(
      sameKeyspace(model, real),
      `${step}: keyspaces differ\n  redis: ${JSON.stringify(real)}\n  model: ${JSON.stringify(model)}`,
    ).toBe(true);
  }
  return { commands: log.length, scripts };
}

/** npm test's quick row: a mutex (strings, the queue) and a semaphore (permits as a zset); every kind in the long tier. */
const QUICK_KINDS: readonly SimKind[] = ['mutex', 'semaphore'];

describe('the simulated Redis answers as a real redis-server does', () => {
  for (const kind of longTier ? REDIS_SIM_KINDS : QUICK_KINDS) {
    it(`${kind}: every command of a simulated schedule, replayed on both`, async () => {
      const { commands } = await replay(kind, 1);
      expect(commands).toBeGreaterThan(20);
    });
  }
});
