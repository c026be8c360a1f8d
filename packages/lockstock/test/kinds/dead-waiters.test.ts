import { describe, expect, it } from 'vitest';
import { forkFixtures } from '../helpers/processes.js';
import { useRedis } from '../helpers/redis.js';

const env = useRedis();
const WAITER_TIMEOUT_MS = 600;

/** Starts a waiter in another process and resolves once `queued()` observes it waiting. */
async function deadWaiter(subject: string, name: string, queued: () => Promise<boolean>) {
  const config = {
    backend: { kind: 'redis', url: env.server.url },
    subject,
    name,
    waiterTimeoutMs: WAITER_TIMEOUT_MS,
  };
  const [waiter] = forkFixtures('waiter.mjs', [[JSON.stringify(config)]]);
  await waiter!.next('waiting');
  while (!(await queued())) await new Promise((resolve) => setImmediate(resolve)); // observed state
  waiter!.kill('SIGKILL');
  await waiter!.exited;
}

describe('a waiter that dies while it waits does not stall the others', () => {
  it('read-write: a dead waiting writer keeps new readers out for the waiter timeout at most', async () => {
    const locks = env.locks({ waiterTimeoutMs: WAITER_TIMEOUT_MS });
    const rw = locks.readWrite('dw-rw');
    const reader = await rw.read.acquire({ owner: 'first-reader' });
    // Once the writer waits, its intent keeps a new reader out: that is what we observe.
    await deadWaiter('write', 'dw-rw', async () => {
      const probe = await rw.read.tryAcquire({ owner: 'probe' });
      if (probe) await probe.release();
      return probe === undefined;
    });
    // The dead writer's intent would keep readers out for good if it did not lapse: the wait bounds it
    // (generously: a loaded machine may be slow, the failure mode is forever).
    const next = await rw.read.acquire({ owner: 'next-reader', waitMs: WAITER_TIMEOUT_MS + 10_000 });
    expect(next.owner).toBe('next-reader'); // (a LockTimeoutError otherwise)
    await Promise.all([next.release(), reader.release()]);
  });

  it('mutex: a turn given to a dead client costs one turn window', async () => {
    const [holderClient, waiterClient] = [env.locks(), env.locks()];
    const held = await holderClient.mutex('dw-mutex').acquire({ leaseMs: 60_000 });
    await deadWaiter('mutex', 'dw-mutex', async () => (await env.redis.zcard('ls:{dw-mutex}:queue')) > 0);
    // The holder's lease is a minute: getting the lock within 10 s means the dead client's turn lapsed
    // after its window (100 ms), not with anybody's lease.
    const alive = waiterClient.mutex('dw-mutex').acquire({ waitMs: 10_000 });
    while ((await env.redis.zcard('ls:{dw-mutex}:queue')) < 2) await new Promise((r) => setImmediate(r));
    await held.release(); // the dead client waited longest: the turn is reserved for it
    const handle = await alive;
    expect(handle.fencingToken).toBeGreaterThan(held.fencingToken); // (a LockTimeoutError otherwise)
    await handle.release();
  });
});
