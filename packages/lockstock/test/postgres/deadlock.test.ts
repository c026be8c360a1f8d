import type pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PostgresServer } from '@lockstock/servers';
import { LockDeadlockError, type LockHandle } from '../../src/index.js';
import { PostgresLockClient } from '../../src/postgres/index.js';
import { forkFixtures } from '../helpers/processes.js';

/**
 * Deadlocks between owners on PostgreSQL: each owner's locks sit on sessions of their own, so the
 * server's detector never sees the cycle (both waits used to run into their timeouts); the backend
 * reads the wait graph by owner and withdraws one wait with LockDeadlockError.
 */
let server: PostgresServer;
const clients: PostgresLockClient[] = [];
beforeAll(async () => {
  // A short deadlock_timeout: the check runs that long after a wait starts (the default is 1 s).
  server = await PostgresServer.start({ settings: { deadlock_timeout: '200ms' } });
});
afterAll(async () => {
  await Promise.all(clients.map((c) => c.close()));
  await server?.stop();
});
function client(): PostgresLockClient {
  const made = new PostgresLockClient({ postgres: server.url, maxConnections: 8 });
  made.on('connectionError', () => undefined);
  clients.push(made);
  return made;
}

let unique = 0;
const lockName = (label: string) => `pg-deadlock-${label}-${process.pid}-${++unique}`;

/** Acquires `name` as `owner`; on a deadlock gives back `held` (as a caller should) and rethrows. */
async function waitFor(locks: PostgresLockClient, name: string, owner: string, held: LockHandle) {
  try {
    return await locks.reentrant(name).acquire({ owner, waitMs: 30_000 });
  } catch (error) {
    await held.release();
    throw error;
  }
}

describe('PostgreSQL deadlocks', () => {
  it('two owners waiting for each other: one acquire fails with LockDeadlockError, the other gets its lock', async () => {
    const [a, b] = [client(), client()];
    const [one, two] = [lockName('one'), lockName('two')];
    const [heldByA, heldByB] = await Promise.all([
      a.reentrant(one).acquire({ owner: 'owner-a' }),
      b.reentrant(two).acquire({ owner: 'owner-b' }),
    ]);
    // Both waits start before either is awaited: the cycle forms on the server.
    const outcomes = await Promise.allSettled([
      waitFor(a, two, 'owner-a', heldByA),
      waitFor(b, one, 'owner-b', heldByB),
    ]);
    const failed = outcomes.filter((o) => o.status === 'rejected');
    const granted = outcomes.filter((o) => o.status === 'fulfilled');
    expect(failed).toHaveLength(1);
    expect(granted).toHaveLength(1);
    const error = (failed[0] as PromiseRejectedResult).reason as LockDeadlockError;
    expect(error).toBeInstanceOf(LockDeadlockError);
    expect(error.code).toBe('ERR_LOCK_DEADLOCK');
    expect(error.detectedBy).toBe('client');
    expect(error.cycle.length).toBe(3); // owner → other owner → owner
    expect(error.cycle[0]).toBe(error.cycle[2]);
    const won = (granted[0] as PromiseFulfilledResult<LockHandle>).value;
    await won.release();
    await (won.name === two ? heldByA : heldByB).release();
  });

  it('across processes: a holder in another process closes the cycle', async () => {
    const [one, two] = [lockName('x1'), lockName('x2')];
    const locks = client();
    const mine = await locks.reentrant(one).acquire({ owner: 'here' });
    const [other] = forkFixtures('deadlock-owner.mjs', [
      [JSON.stringify({ url: server.url, hold: two, want: one })],
    ]);
    try {
      await other!.next('holding');
      const waited = waitFor(locks, two, 'here', mine).then(
        (handle) => ({ handle }),
        (error: unknown) => ({ error }),
      );
      const theirs = await other!.next('outcome');
      const ours = await waited;
      // Exactly one side was withdrawn with a deadlock; the other was granted.
      const deadlocks = [theirs.error === 'ERR_LOCK_DEADLOCK', 'error' in ours].filter(Boolean);
      expect(deadlocks).toHaveLength(1);
      if ('error' in ours) expect(ours.error).toBeInstanceOf(LockDeadlockError);
      else {
        expect(theirs.granted).toBe(false);
        await ours.handle.release();
        await mine.release();
      }
    } finally {
      other!.kill();
    }
  });
});

describe('withTransactionLock deadlocks', () => {
  it("PostgreSQL's own 40P01 between two transactions is a LockDeadlockError; the victim's transaction stays usable", async () => {
    const { default: pgDriver } = await import('pg');
    const [one, two] = [lockName('tx1'), lockName('tx2')];
    const { withTransactionLock } = await import('../../src/postgres/index.js');
    const txs = [new pgDriver.Client(server.url), new pgDriver.Client(server.url)];
    await Promise.all(txs.map((tx) => tx.connect()));
    try {
      await Promise.all(txs.map((tx) => tx.query('BEGIN')));
      let bothHolding!: () => void;
      let holding = 0;
      const ready = new Promise<void>((resolve) => (bothHolding = resolve));
      // Each transaction takes its first lock, waits until the other holds its own, then wants it.
      const run = (tx: pg.Client, first: string, second: string) =>
        withTransactionLock(tx, first, async () => {
          if (++holding === 2) bothHolding();
          await ready;
          return withTransactionLock(tx, second, async () => 'granted', { waitMs: 30_000 }).catch(
            async (error: unknown) => {
              // The victim's transaction still answers (savepoint rolled back), its first lock still held.
              await tx.query('SELECT 1');
              await tx.query('ROLLBACK');
              throw error;
            },
          );
        }).then(async (result) => {
          await tx.query('COMMIT');
          return result;
        });
      const outcomes = await Promise.allSettled([run(txs[0]!, one, two), run(txs[1]!, two, one)]);
      const failed = outcomes.filter((o) => o.status === 'rejected') as PromiseRejectedResult[];
      expect(failed).toHaveLength(1);
      expect(failed[0]!.reason).toBeInstanceOf(LockDeadlockError);
      expect((failed[0]!.reason as LockDeadlockError).detectedBy).toBe('server');
      expect(outcomes.filter((o) => o.status === 'fulfilled')).toHaveLength(1);
    } finally {
      await Promise.all(txs.map((tx) => tx.end()));
    }
  });
});
