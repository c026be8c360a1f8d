import diagnostics_channel from 'node:diagnostics_channel';
import { afterEach, describe, expect, it } from 'vitest';
import { LOCK_CHANNELS, LockAbortedError, LockLostError, LockTimeoutError } from '../../src/index.js';
import { useRedis } from '../helpers/redis.js';

// What the diagnostics channels publish beyond the contract's acquire/release (test/contract):
// outcomes of refused and failed acquires, renewals, losses and hand-offs — on Redis.
const env = useRedis();

let unique = 0;
const lockName = (label: string) => `diag-${label}-${process.pid}-${++unique}`;

type Seen = { event: string; message: Record<string, unknown> };
const unsubscribes: Array<() => void> = [];
afterEach(() => {
  for (const unsubscribe of unsubscribes.splice(0)) unsubscribe();
});

/** Records every message about locks named `name` from now on (copied as published). */
function record(name: string): Seen[] {
  const seen: Seen[] = [];
  const listener = (event: string) => (message: unknown) => {
    const fields = message as Record<string, unknown>;
    if (fields.name === name) seen.push({ event, message: { ...fields } });
  };
  const tracing = {
    start: listener('start'),
    end: listener('end'),
    asyncStart: listener('asyncStart'),
    asyncEnd: listener('asyncEnd'),
    error: listener('error'),
  };
  const acquire = diagnostics_channel.tracingChannel(LOCK_CHANNELS.acquire);
  acquire.subscribe(tracing);
  unsubscribes.push(() => acquire.unsubscribe(tracing));
  for (const [event, channel] of Object.entries(LOCK_CHANNELS)) {
    if (event === 'acquire') continue;
    const onMessage = listener(event);
    diagnostics_channel.subscribe(channel, onMessage);
    unsubscribes.push(() => diagnostics_channel.unsubscribe(channel, onMessage));
  }
  return seen;
}

const of = (seen: Seen[], event: string) => seen.filter((s) => s.event === event).map((s) => s.message);
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe('diagnostics channels', () => {
  it('say how a refused, timed-out or aborted acquire ended', async () => {
    const locks = env.locks();
    const name = lockName('outcomes');
    const lock = locks.mutex(name);
    const held = await lock.acquire();
    const seen = record(name);
    expect(await lock.tryAcquire()).toBeUndefined();
    await expect(lock.acquire({ waitMs: 30 })).rejects.toBeInstanceOf(LockTimeoutError);
    const controller = new AbortController();
    const aborted = lock.acquire({ signal: controller.signal });
    controller.abort(new Error('gave up'));
    await expect(aborted).rejects.toBeInstanceOf(LockAbortedError);
    await held.release();
    const ends = of(seen, 'asyncEnd');
    expect(ends.map((m) => m.outcome)).toEqual(['busy', 'timeout', 'aborted']);
    expect(ends.map((m) => m.waitLimitMs)).toEqual([0, 30, Infinity]);
    expect(ends[1]!.waitMs).toBeGreaterThanOrEqual(29);
    // A rejected acquire goes through the TracingChannel's error event, with the error.
    expect(of(seen, 'error').map((m) => (m.error as Error).constructor)).toEqual([
      LockTimeoutError,
      LockAbortedError,
    ]);
    // The hold taken before the subscription still reports its end.
    expect(of(seen, 'hold')).toMatchObject([{ ended: 'released', outcome: 'released', owner: held.owner }]);
  });

  it('report each renewal and a loss, once, with the hold', async () => {
    const locks = env.locks({ watchdogTimeoutMs: 150 });
    const name = lockName('renew-lost');
    const seen = record(name);
    const handle = await locks.mutex(name).acquire();
    await expect.poll(() => of(seen, 'renew').length).toBeGreaterThanOrEqual(2);
    expect(of(seen, 'renew')[0]).toMatchObject({
      outcome: 'renewed',
      fencingToken: handle.fencingToken,
      handle,
      backend: 'redis',
      kind: 'mutex',
    });
    expect(of(seen, 'renew')[0]!.renewMs).toBeGreaterThanOrEqual(0);
    await env.redis.del(`ls:{${name}}`); // ended behind its back: the next renewal finds it gone
    await new Promise((resolve) => handle.signal.addEventListener('abort', resolve, { once: true }));
    expect(of(seen, 'renew').at(-1)).toMatchObject({ outcome: 'lost' });
    expect(of(seen, 'lost')).toMatchObject([{ reason: 'expired', handle, owner: handle.owner }]);
    expect(of(seen, 'lost')[0]!.error).toBeInstanceOf(LockLostError);
    expect(of(seen, 'hold')).toMatchObject([{ ended: 'lost', outcome: 'expired' }]);
    expect(await handle.release()).toBe('expired');
    expect(of(seen, 'release')).toMatchObject([{ outcome: 'expired' }]);
    expect(of(seen, 'hold')).toHaveLength(1); // the release of a lost hold adds no second end
  });

  it('report a release that hands the lock to a waiter of the same client', async () => {
    const locks = env.locks();
    const name = lockName('handoff');
    const lock = locks.mutex(name);
    const seen = record(name);
    const first = await lock.acquire();
    const waiting = lock.acquire({ waitMs: 5_000 });
    await sleep(20);
    await first.release();
    const second = await waiting;
    await second.release();
    expect(of(seen, 'handoff')).toMatchObject([
      {
        from: first.owner,
        owner: second.owner,
        fencingToken: second.fencingToken,
        handle: second,
        via: 'local',
      },
    ]);
    // The waiter's acquire covers its wait up to the hand-off.
    const waited = of(seen, 'asyncEnd').find((m) => m.owner === second.owner);
    expect(waited).toMatchObject({ outcome: 'acquired', handle: second });
    expect(waited!.waitMs).toBeGreaterThanOrEqual(15);
  });

  it('publish nothing without subscribers (and locks work the same)', async () => {
    const name = lockName('quiet');
    const lock = env.locks().mutex(name);
    const handle = await lock.acquire();
    await sleep(10);
    expect(await handle.release()).toBe('released');
    expect(diagnostics_channel.channel(LOCK_CHANNELS.hold).hasSubscribers).toBe(false);
  });
});
