import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunResult } from '../../src/lab/checker.js';
import type { LabOptions } from '../../src/lab/runner.js';
import { PostgresServer, RedisServer } from '@lockstock/servers';
import { longTier } from '../helpers/tier.js';

/** The correct designs' repeated runs: 3 in npm test, 10 in the long tier (npm run test:long). */
const CORRECT_RUNS = longTier ? 10 : 3;

/*
 * The lab's claims, proven on real sales: every run forks worker processes (the built worker, so
 * this imports the built runner) that buy at once against one redis-server and one PostgreSQL,
 * and the checker counts from the recorded orders and the final stock.
 */
const runnerPath = fileURLToPath(new URL('../../dist/lab/runner.js', import.meta.url));
const { runLab } = (await import(runnerPath)) as typeof import('../../src/lab/runner.js');

let redis: RedisServer;
let postgres: PostgresServer;
beforeAll(async () => {
  [redis, postgres] = await Promise.all([RedisServer.start(), PostgresServer.start()]);
});
afterAll(async () => {
  await Promise.all([redis?.stop(), postgres?.stop()]);
});

function lab(options: Partial<LabOptions> & Pick<LabOptions, 'strategies'>): Promise<RunResult[]> {
  return runLab({
    stock: 20,
    buyers: 60,
    processes: 3,
    concurrency: 8,
    runs: 3,
    redisUrl: redis.url,
    databaseUrl: postgres.url,
    ...options,
  });
}

const byStrategy = (results: RunResult[], name: string) => results.filter((r) => r.strategy === name);

describe('oversell lab', () => {
  it('every broken design oversells (or goes negative) in repeated runs', async () => {
    const naive = [
      'naive-redis',
      'naive-sql',
      'sql-unchecked-decrement',
      'mysql-unchecked-decrement',
      'local-mutex-commit-race',
      'redis-lock-unowned-release',
      'redis-lock-paused',
    ];
    const results = await lab({ strategies: naive, runs: 3 });
    for (const name of naive) {
      const runs = byStrategy(results, name);
      expect(runs).toHaveLength(3);
      const oversold = runs.reduce((sum, r) => sum + r.oversold, 0);
      expect(oversold, `${name} oversold`).toBeGreaterThan(0);
    }
    // The record, not the strategy's belief: every order the naive code recorded it also believed
    // sold. The paused lock holder is the exception the checker exists for: lockstock reports the
    // lost lease (run() rejects), yet the write already landed and the order counts.
    for (const r of results.filter((r) => r.strategy !== 'redis-lock-paused')) {
      expect(r.sold, r.strategy).toBe(r.believedSold);
    }
    const paused = byStrategy(results, 'redis-lock-paused');
    expect(paused.reduce((sum, r) => sum + r.sold - r.believedSold, 0)).toBeGreaterThan(0);
    for (const name of ['sql-unchecked-decrement', 'mysql-unchecked-decrement']) {
      const negative = byStrategy(results, name).filter((r) => r.finalStock < 0);
      expect(negative.length, name).toBeGreaterThan(0);
    }
  });

  it('locks without an expiry stall behind a crashed holder and leave stock unsold', async () => {
    const stalling = ['redis-lock-no-expiry', 'redis-lock-setnx-expire'];
    const results = await lab({ strategies: stalling, runs: 2, stock: 40, buyers: 90 });
    for (const name of stalling) {
      for (const r of byStrategy(results, name)) {
        expect(r.oversold, name).toBe(0);
        expect(r.unsold, name).toBeGreaterThan(0);
        expect(r.errors, name).toBeGreaterThan(0);
      }
    }
  });

  it(`every correct design sells exactly the stock, once per buyer, across ${CORRECT_RUNS} runs`, async () => {
    const correct = [
      'sql-atomic',
      'sql-optimistic',
      'sql-for-update',
      'sql-lock-table',
      // The same remedies on MariaDB (started by the lab for them).
      'mysql-atomic',
      'mysql-optimistic',
      'mysql-for-update',
      'mysql-lock-table',
      'redis-lock',
      'redis-reentrant-lock',
      'redis-lock-fenced',
      'redis-watch',
      'redis-lua',
      'redis-lua-hash',
      'redis-lua-decr',
      'redis-lua-segmented',
      'service',
      // The lock-based sale on the other backends (the same body as redis-lock; local-mutex, the
      // same body under an in-process lock, oversells below: the section needs the lock).
      'zookeeper-lock',
      'etcd-lock',
      'postgres-advisory-lock',
      'mysql-lock',
    ];
    const results = await lab({
      strategies: correct,
      runs: CORRECT_RUNS,
      stock: 10,
      buyers: 30,
      strategyOptions: { 'sql-optimistic': { retries: -1 }, 'mysql-optimistic': { retries: -1 } },
    });
    for (const name of correct) {
      const runs = byStrategy(results, name);
      expect(runs).toHaveLength(CORRECT_RUNS);
      for (const r of runs) {
        expect({
          name,
          oversold: r.oversold,
          duplicates: r.duplicateBuyers,
          sold: r.sold,
          errors: r.errors,
        }).toEqual({ name, oversold: 0, duplicates: 0, sold: 10, errors: 0 });
      }
    }
  }, 240_000); // ~22 s on a quiet 2-core machine: 26 strategies, ZooKeeper, etcd and MariaDB started

  it('Redlock on 5 masters sells exactly the stock', async () => {
    const redlock = await lab({ strategies: ['redlock'], runs: 5, stock: 10, buyers: 30 });
    for (const r of redlock) expect([r.oversold, r.duplicateBuyers, r.sold, r.errors]).toEqual([0, 0, 10, 0]);
  }, 120_000);

  // Each failover run starts a Sentinel-managed master + replica and fails it over mid-sale.
  it('a lock lost in a replica failover oversells', async () => {
    const failover = await lab({ strategies: ['redis-lock-failover'], runs: 2 });
    for (const r of failover) expect(r.oversold).toBeGreaterThan(0);
  }, 120_000);

  it('a local mutex is enough in one process and guards nothing across several', async () => {
    const single = await lab({ strategies: ['local-mutex'], processes: 1, runs: 10, stock: 10, buyers: 30 });
    for (const r of single) expect([r.oversold, r.sold]).toEqual([0, 10]);
    const several = await lab({ strategies: ['local-mutex'], processes: 3, runs: 3 });
    expect(several.reduce((sum, r) => sum + r.oversold, 0)).toBeGreaterThan(0);
  });

  // Both on the lab's own 3-master Cluster (started by the first of them, stopped by their teardown).
  it('on a Cluster, the naive split tells buyers sold out while units are left, leaves units unsold and sells twice to one buyer; the split sale does none of it', async () => {
    // One press each, a few more buyers than units: the naive split's segments run dry unevenly.
    const once = await lab({
      strategies: ['cluster-naive-split', 'cluster-split-sale'],
      runs: 10,
      stock: 30,
      buyers: 36,
      strategyOptions: { 'cluster-naive-split': { presses: 1 }, 'cluster-split-sale': { presses: 1 } },
    });
    const naive = byStrategy(once, 'cluster-naive-split');
    expect(naive.reduce((sum, r) => sum + r.falseSoldOut, 0)).toBeGreaterThan(0);
    expect(naive.reduce((sum, r) => sum + r.unsold, 0)).toBeGreaterThan(0);
    // Two presses each (a double click): a buyer lands on two segments.
    const twice = await lab({
      strategies: ['cluster-naive-split', 'cluster-split-sale'],
      runs: 3,
      stock: 30,
      buyers: 40,
    });
    expect(
      byStrategy(twice, 'cluster-naive-split').reduce((sum, r) => sum + r.duplicateBuyers, 0),
    ).toBeGreaterThan(0);
    for (const r of [...byStrategy(once, 'cluster-split-sale'), ...byStrategy(twice, 'cluster-split-sale')]) {
      expect([r.oversold, r.duplicateBuyers, r.unsold, r.falseSoldOut, r.sold, r.errors]).toEqual([
        0, 0, 0, 0, 30, 0,
      ]);
    }
  }, 180_000);

  it('optimistic locking leaves stock unsold when retries run out, none when they do not (PostgreSQL and MySQL)', async () => {
    const strategies = ['sql-optimistic', 'mysql-optimistic'];
    const options = (retries: number) => ({
      strategies,
      runs: 3,
      strategyOptions: Object.fromEntries(strategies.map((name) => [name, { retries }])),
    });
    const bounded = await lab(options(0));
    for (const name of strategies) {
      const runs = byStrategy(bounded, name);
      expect(
        runs.reduce((sum, r) => sum + r.unsold, 0),
        name,
      ).toBeGreaterThan(0);
      for (const r of runs) expect(r.oversold, name).toBe(0);
    }
    const unbounded = await lab(options(-1));
    for (const r of unbounded)
      expect([r.strategy, r.unsold, r.oversold, r.sold]).toEqual([r.strategy, 0, 0, 20]);
  }, 120_000);
});
