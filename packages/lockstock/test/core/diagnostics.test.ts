import diagnostics_channel from 'node:diagnostics_channel';
import { afterEach, describe, expect, it } from 'vitest';
import {
  InvalidLockOptionError,
  LOCK_CHANNELS,
  LockAbortedError,
  LockHoldBudgetError,
  LockLostError,
  LockTimeoutError,
} from '../../src/index.js';
import { useRedis } from '../helpers/redis.js';

// What the diagnostics channels publish beyond the contract's acquire/release (test/contract):
// outcomes of refused and failed acquires, renewals, losses, hand-offs and hold budgets — on Redis.
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
    // (On a loaded machine a 150 ms lease may lapse before the delete: the signal has aborted already.)
    if (!handle.signal.aborted) {
      await new Promise((resolve) => handle.signal.addEventListener('abort', resolve, { once: true }));
    }
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
    const startedAt = performance.now();
    const waiting = lock.acquire({ waitMs: 5_000 });
    // The waiter is in the lock's room once the room has subscribed to its wake channel: the release
    // then hands it the lock in the process.
    await expect.poll(() => env.redis.pubsub('SHARDCHANNELS', `*${name}*`)).not.toHaveLength(0);
    await first.release();
    const second = await waiting;
    const waitedAtMostMs = performance.now() - startedAt;
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
    expect(waited!.waitMs).toBeGreaterThan(0);
    expect(waited!.waitMs).toBeLessThanOrEqual(waitedAtMostMs);
  });

  it('publish nothing without subscribers (and locks work the same)', async () => {
    const name = lockName('quiet');
    const lock = env.locks().mutex(name);
    const handle = await lock.acquire({ holdBudgetMs: 1, onBudget: 'abort' });
    // The budget ran out (its signal says so) with nobody listening.
    await new Promise((resolve) => handle.signal.addEventListener('abort', resolve, { once: true }));
    expect(await handle.release()).toBe('released');
    expect(diagnostics_channel.channel(LOCK_CHANNELS.hold).hasSubscribers).toBe(false);
  });
});

describe('hold budgets', () => {
  it('warn by default: the budget message, the signal untouched', async () => {
    const name = lockName('budget-warn');
    const seen = record(name);
    const handle = await env.locks().mutex(name).acquire({ holdBudgetMs: 30 });
    await expect.poll(() => of(seen, 'budget').length).toBe(1);
    expect(of(seen, 'budget')[0]).toMatchObject({
      budgetMs: 30,
      action: 'warn',
      handle,
      owner: handle.owner,
    });
    expect(of(seen, 'budget')[0]!.heldMs).toBeGreaterThanOrEqual(29);
    expect(handle.signal.aborted).toBe(false);
    expect(await handle.release()).toBe('released');
  });

  it("'abort' aborts the signal with LockHoldBudgetError; the lock stays held until released", async () => {
    const locks = env.locks();
    const name = lockName('budget-abort');
    const seen = record(name);
    const lock = locks.mutex(name);
    const outcome = await lock
      .run(
        async (signal) => {
          await new Promise((resolve) => signal.addEventListener('abort', resolve, { once: true }));
          expect(await lock.isLocked()).toBe(true);
          throw signal.reason;
        },
        { holdBudgetMs: 30, onBudget: 'abort' },
      )
      .catch((error: unknown) => error);
    expect(outcome).toBeInstanceOf(LockHoldBudgetError);
    expect(outcome).toMatchObject({ code: 'ERR_LOCK_HOLD_BUDGET', budgetMs: 30, lockName: name });
    expect(await lock.isLocked()).toBe(false); // run() released it
    expect(of(seen, 'budget')).toMatchObject([{ action: 'abort', budgetMs: 30 }]);
    expect(of(seen, 'hold')).toMatchObject([{ ended: 'released', outcome: 'released' }]);
  });

  it('a signal asked for after the budget ran out is already aborted; a released hold never reports', async () => {
    const locks = env.locks();
    const name = lockName('budget-late');
    const seen = record(name);
    const late = await locks.mutex(name).acquire({ holdBudgetMs: 20, onBudget: 'abort' });
    await expect.poll(() => of(seen, 'budget').length).toBe(1);
    expect(late.signal.aborted).toBe(true);
    expect(late.signal.reason).toBeInstanceOf(LockHoldBudgetError);
    expect(late.lostError).toBeUndefined();
    await late.release();
    const early = await locks.mutex(name).acquire({ holdBudgetMs: 40, onBudget: 'abort' });
    await early.release();
    // A witness with the same budget, started later: once its budget has run out, the released
    // hold's would have too (timers of one duration fire in the order they were set).
    const witness = await locks.mutex(name).acquire({ holdBudgetMs: 40, onBudget: 'abort' });
    await new Promise((resolve) => witness.signal.addEventListener('abort', resolve, { once: true }));
    await witness.release();
    expect(of(seen, 'budget').map((message) => message.handle)).toEqual([late, witness]);
    expect(early.signal.aborted).toBe(false);
  });

  it('refuses malformed budgets', async () => {
    const lock = env.locks().mutex(lockName('budget-bad'));
    await expect(lock.acquire({ holdBudgetMs: 0 })).rejects.toBeInstanceOf(InvalidLockOptionError);
    await expect(lock.acquire({ holdBudgetMs: 1.5 })).rejects.toBeInstanceOf(InvalidLockOptionError);
    await expect(lock.acquire({ onBudget: 'abort' })).rejects.toBeInstanceOf(InvalidLockOptionError);
    await expect(lock.acquire({ holdBudgetMs: 10, onBudget: 'stop' as 'abort' })).rejects.toBeInstanceOf(
      InvalidLockOptionError,
    );
  });

  it('applies to every part of a multi-lock', async () => {
    const locks = env.locks();
    const name = lockName('budget-multi');
    const seen = [...[`${name}:a`, `${name}:b`].map((part) => record(part))];
    const multi = locks.multiLock([locks.mutex(`${name}:a`), locks.mutex(`${name}:b`)]);
    const handle = await multi.acquire({ holdBudgetMs: 20 });
    await expect.poll(() => seen.map((s) => of(s, 'budget').length)).toEqual([1, 1]);
    await handle.release();
  });
});
