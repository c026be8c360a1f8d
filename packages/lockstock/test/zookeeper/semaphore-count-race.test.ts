import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ZooKeeperServer } from '@lockstock/servers';
import { PermitsMismatchError } from '../../src/index.js';
import { ZooKeeperLockClient } from '../../src/zookeeper/index.js';
import { ZOOKEEPER_TICK_MS } from '../contract/backends.js';

/**
 * A ZooKeeper semaphore's waiter reads the stored count, then (the permits full) sets its watch on
 * the count: a setPermits between the two reads changed the count before the watch was set, so the
 * watch never fired for it and the waiter slept until its wait ran out (LockTimeoutError, seen in a
 * CI run) instead of learning of the new count. The race, many times: a waiter begins and the count
 * changes at once, at a spread of moments; every waiter must be refused with PermitsMismatchError.
 */
const ROUNDS = 24;
let server: ZooKeeperServer;
const clients: ZooKeeperLockClient[] = [];

beforeAll(async () => {
  server = await ZooKeeperServer.start({ tickTimeMs: ZOOKEEPER_TICK_MS });
});
afterAll(async () => {
  await Promise.all(clients.map((c) => c.close()));
  await server?.stop();
});

describe('ZooKeeper semaphore: the count changed while a waiter begins', () => {
  it(`the waiter learns of it every time (${ROUNDS} rounds)`, async () => {
    const [a, b] = [0, 1].map(() => {
      const made = new ZooKeeperLockClient({ connectString: server.connectString, sessionTimeoutMs: 10_000 });
      clients.push(made);
      return made;
    }) as [ZooKeeperLockClient, ZooKeeperLockClient];
    const outcomes: string[] = [];
    for (let round = 0; round < ROUNDS; round++) {
      const name = `count-race-${process.pid}-${round}`;
      const held = await a.semaphore(name, { permits: 1 }).acquire({ owner: 'holder' });
      // Both started before either is awaited; the change lands at a different moment each round.
      const waiter = b
        .semaphore(name, { permits: 1 })
        .acquire({ owner: 'waiter', waitMs: 8_000 })
        .then(
          async (handle) => {
            await handle.release();
            return 'granted';
          },
          (error: unknown) => (error instanceof PermitsMismatchError ? 'refused' : String(error)),
        );
      for (let i = 0; i < round % 6; i++) await new Promise((resolve) => setImmediate(resolve));
      await a.semaphore(name, { permits: 2 }).setPermits(2);
      outcomes.push(await waiter);
      await held.release();
    }
    expect(outcomes.filter((outcome) => outcome !== 'refused')).toEqual([]);
  }, 240_000);
});
