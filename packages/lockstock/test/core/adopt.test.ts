import { describe, expect, it } from 'vitest';
import { InvalidLockOptionError, NotLockOwnerError } from '../../src/index.js';
import { forkFixtures } from '../helpers/processes.js';
import { nextEvent, useRedis } from '../helpers/redis.js';

const env = useRedis();

describe('adopting a hold by its owner id', () => {
  it('a hold taken in one process is adopted in another, which renews it after the first dies', async () => {
    const name = 'adopt-cross';
    const config = {
      backend: { kind: 'redis', url: env.server.url },
      subject: 'mutex',
      name,
      mode: 'watchdog',
      ms: 30_000,
      holds: 1,
    };
    const [holder] = forkFixtures('holder.mjs', [[JSON.stringify(config)]]);
    try {
      const { tokens } = await holder!.next('acquired');
      const owner = `holder-${holder!.child.pid}-0`; // the fixture's owner ids (holder.mjs)
      const locks = env.locks({ watchdogTimeoutMs: 600 });
      const handle = await locks.mutex(name).adopt(owner, { fencingToken: (tokens as number[])[0]! });
      expect(handle.owner).toBe(owner);
      expect(handle.renewed).toBe(true);
      expect(await env.redis.pttl(`ls:{${name}}`)).toBeLessThanOrEqual(600); // our lease now
      holder!.kill('SIGKILL');
      await holder!.exited;
      // Its renewals are gone; ours keep the hold across several leases of 600 ms.
      for (let i = 0; i < 6; i++) await nextEvent(locks, 'renewed', (e) => e.name === name);
      expect(handle.signal.aborted).toBe(false);
      expect(await env.locks().mutex(name).tryAcquire()).toBeUndefined();
      expect(await handle.release()).toBe('released');
      const next = await env.locks().mutex(name).acquire({ waitMs: 5_000 });
      expect(next.fencingToken).toBeGreaterThan(handle.fencingToken);
      await next.release();
    } finally {
      holder!.kill('SIGKILL');
    }
  });

  it('refuses a hold that ended or that another owner has, and changes nothing', async () => {
    const locks = env.locks();
    const lock = locks.mutex('adopt-refused');
    const held = await lock.acquire();
    await expect(lock.adopt('somebody-else', { fencingToken: held.fencingToken })).rejects.toBeInstanceOf(
      NotLockOwnerError,
    );
    expect(await env.redis.get('ls:{adopt-refused}')).toBe(held.owner);
    await held.release();
    const error = await lock.adopt(held.owner, { fencingToken: held.fencingToken }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(NotLockOwnerError);
    expect(await lock.isLocked()).toBe(false);
  });

  it('an explicit lease, re-entry after adoption, and the kinds that cannot be adopted', async () => {
    const [a, b] = [env.locks(), env.locks()];
    const original = await a.reentrant('adopt-reentrant').acquire({ owner: 'job-7' });
    original.stopRenewal(); // the acquiring process hands renewal over
    const adopted = await b.reentrant('adopt-reentrant').adopt('job-7', {
      fencingToken: original.fencingToken,
      leaseMs: 20_000,
    });
    expect([adopted.renewed, adopted.leaseMs]).toEqual([false, 20_000]);
    const inner = await b.reentrant('adopt-reentrant').acquire({ owner: 'job-7', waitMs: 0 });
    expect(inner.fencingToken).toBe(original.fencingToken);
    expect(await inner.release()).toBe('still_held');
    expect(await adopted.release()).toBe('released');

    await expect(
      a.counterSemaphore('adopt-counter', { permits: 2 }).adopt('anyone', { fencingToken: 1 }),
    ).rejects.toBeInstanceOf(InvalidLockOptionError);
    await expect(a.mutex('adopt-bad').adopt('x', { fencingToken: -1 })).rejects.toBeInstanceOf(
      InvalidLockOptionError,
    );
  });
});
