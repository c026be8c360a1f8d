import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RedisServer } from '../../src/servers/index.js';
import { checkExclusion, type SectionRecord } from '../helpers/history.js';
import { forkFixtures, startTogether } from '../helpers/processes.js';

const PROCESSES = 4;
const LOOPS = 2;
const SECTIONS = 25;

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

/** Runs PROCESSES contender processes against one lock; returns their records and the final counter. */
async function compete(mode: 'mutex' | 'reentrant' | 'none', lockName: string) {
  const args = [server.url, mode, lockName, String(LOOPS), String(SECTIONS)];
  const contenders = forkFixtures(
    'contender.mjs',
    Array.from({ length: PROCESSES }, () => args),
  );
  await startTogether(contenders);
  const done = await Promise.all(contenders.map((c) => c.next('done')));
  await Promise.all(contenders.map((c) => c.exited));
  const records = done.flatMap((m) => m.records as SectionRecord[]);
  const counter = Number(await redis.get(`test:{${lockName}}:counter`));
  return { records, counter };
}

describe('mutual exclusion across OS processes', () => {
  const total = PROCESSES * LOOPS * SECTIONS;

  it.each(['mutex', 'reentrant'] as const)('%s: no lost update, no overlap, growing tokens', async (mode) => {
    const { records, counter } = await compete(mode, `excl-${mode}`);
    expect(new Set(records.map((r) => r.pid)).size).toBe(PROCESSES);
    expect(counter).toBe(total);
    expect(records.every((r) => r.outcome === 'released')).toBe(true);
    expect(checkExclusion(records)).toEqual({ sections: total, overlaps: 0, tokenRegressions: 0 });
    expect(new Set(records.map((r) => r.token)).size).toBe(total);
  });

  it('negative control: the same work without the lock loses updates and overlaps', async () => {
    const { records, counter } = await compete('none', 'excl-none');
    expect(counter).toBeLessThan(total);
    expect(checkExclusion(records).overlaps).toBeGreaterThan(0);
  });
});
