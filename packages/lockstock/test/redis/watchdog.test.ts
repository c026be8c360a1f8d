import { describe, expect, it } from 'vitest';
import { LockLostError, type LockLostEvent } from '../../src/index.js';
import { nextEvent, useRedis } from '../helpers/redis.js';

const env = useRedis();
const TIMEOUT = 300;

describe('watchdog', () => {
  it('keeps a section 3x longer than the timeout alive, then stops after release', async () => {
    // A timeout a loaded 2-core machine cannot stall past between two renewals (a third of it).
    const timeoutMs = 1_200;
    const locks = env.locks({ watchdogTimeoutMs: timeoutMs });
    const lock = locks.mutex('w-long');
    const renewals: number[] = [];
    locks.on('renewed', (e) => e.name === 'w-long' && renewals.push(e.fencingToken));
    const handle = await lock.acquire();
    expect(handle.renewed).toBe(true);
    const startedAt = performance.now();
    // The critical section lasts 9 renewals, 3 timeouts; the lease must be ours after each.
    while (renewals.length < 9) {
      // A hold lost meanwhile (a stall past the lease) fails here with its reason, not as a timeout.
      await Promise.race([
        nextEvent(locks, 'renewed', (e) => e.name === 'w-long'),
        new Promise((resolve) => handle.signal.addEventListener('abort', resolve, { once: true })),
      ]);
      expect(handle.lostError?.message).toBeUndefined();
      expect(await env.redis.get('ls:{w-long}')).toBe(handle.owner);
      expect(await env.redis.pttl('ls:{w-long}')).toBeGreaterThan(0);
    }
    expect(performance.now() - startedAt).toBeGreaterThan(2 * timeoutMs); // longer than the lease
    expect(handle.signal.aborted).toBe(false);
    expect(await handle.release()).toBe('released');

    // After release: give another lock's renewals time to happen twice; ours must not renew again.
    const renewalsAtRelease = renewals.length;
    const clock = await locks.mutex('w-clock').acquire();
    await env.redis.set('ls:{w-long}', 'next-holder', 'PX', 60_000);
    for (let i = 0; i < 2; i++) await nextEvent(locks, 'renewed', (e) => e.name === 'w-clock');
    expect(renewals.length).toBe(renewalsAtRelease);
    expect(await env.redis.get('ls:{w-long}')).toBe('next-holder');
    expect(await env.redis.pttl('ls:{w-long}')).toBeLessThan(60_000);
    await clock.release();
  });

  it('deleting the key underneath aborts the signal with LockLostError and emits lost', async () => {
    const locks = env.locks({ watchdogTimeoutMs: TIMEOUT });
    const handle = await locks.mutex('w-deleted').acquire();
    const lost = nextEvent(locks, 'lost', (e) => e.name === 'w-deleted');
    const aborted = new Promise((resolve) => handle.signal.addEventListener('abort', resolve));
    await env.redis.del('ls:{w-deleted}');
    await aborted;
    expect(handle.signal.reason).toBeInstanceOf(LockLostError);
    expect(handle.signal.reason).toMatchObject({ reason: 'expired', code: 'ERR_LOCK_LOST' });
    const event: LockLostEvent = await lost;
    expect(event).toMatchObject({
      owner: handle.owner,
      fencingToken: handle.fencingToken,
      reason: 'expired',
    });
    expect(await handle.release()).toBe('expired');
  });

  it('a lock taken by another owner is reported as taken, never re-acquired', async () => {
    const locks = env.locks({ watchdogTimeoutMs: TIMEOUT });
    const handle = await locks.mutex('w-taken').acquire();
    await env.redis.set('ls:{w-taken}', 'usurper', 'PX', 60_000);
    const event = await nextEvent(locks, 'lost', (e) => e.name === 'w-taken');
    expect(event.reason).toBe('taken');
    expect(handle.lostError?.reason).toBe('taken');
    expect(await env.redis.get('ls:{w-taken}')).toBe('usurper');
  });

  it('an explicit lease is not renewed and its signal aborts when it ends', async () => {
    const locks = env.locks({ watchdogTimeoutMs: TIMEOUT });
    const handle = await locks.mutex('w-explicit').acquire({ leaseMs: 200 });
    expect(handle.renewed).toBe(false);
    await new Promise((resolve) => handle.signal.addEventListener('abort', resolve));
    expect(handle.lostError?.reason).toBe('lease_ended');
  });

  it('stopRenewal hands a hold back to its lease: it ends, the signal aborts, others get it', async () => {
    const locks = env.locks({ watchdogTimeoutMs: TIMEOUT });
    const handle = await locks.mutex('w-stop').acquire();
    const lost: unknown[] = [];
    handle.onLost((error) => lost.push(error));
    handle.stopRenewal();
    expect(handle.renewed).toBe(false);
    await new Promise((resolve) => handle.signal.addEventListener('abort', resolve, { once: true }));
    expect(handle.lostError?.reason).toBe('lease_ended');
    expect(lost).toEqual([handle.lostError]);
    const next = await env.locks().mutex('w-stop').acquire({ waitMs: 10_000 }); // the lease ran out
    await next.release();
    expect(await handle.release()).toBe('expired');
  });

  it('onLost calls each listener once, and not after it was removed', async () => {
    const locks = env.locks({ watchdogTimeoutMs: TIMEOUT });
    const handle = await locks.mutex('w-onlost').acquire();
    const calls: string[] = [];
    handle.onLost((error) => calls.push(`kept:${error.reason}`));
    const remove = handle.onLost(() => calls.push('removed'));
    remove();
    const aborted = new Promise((resolve) => handle.signal.addEventListener('abort', resolve));
    await env.redis.del('ls:{w-onlost}');
    await aborted;
    expect(calls).toEqual(['kept:expired']);
    const late = await new Promise((resolve) => handle.onLost(resolve)); // already lost: called at once
    expect(late).toBe(handle.lostError);
  });

  it('renewals of many locks leave together and keep all of them', async () => {
    // Fifty leases must all outlive their first renewal round: room for a slow machine's stall.
    const locks = env.locks({ watchdogTimeoutMs: 1_200 });
    const handles = await Promise.all(
      Array.from({ length: 50 }, (_, i) => locks.mutex(`w-many-${i}`).acquire()),
    );
    const renewed = new Set<string>();
    await new Promise<void>((resolve) => {
      locks.on('renewed', (e) => {
        renewed.add(e.name);
        if (renewed.size === 50) resolve();
      });
    });
    const owners = await Promise.all(handles.map((h) => env.redis.get(`ls:{${h.name}}`)));
    expect(owners).toEqual(handles.map((h) => h.owner));
    expect(handles.every((h) => !h.signal.aborted)).toBe(true);
    await Promise.all(handles.map((h) => h.release()));
  });
});
