import { describe, expect, it } from 'vitest';
import { checkLockHistory, type HistoryEvent } from '../../src/checker/index.js';
import {
  LockClientClosedError,
  LockLostError,
  LockUpgradeError,
  PermitsMismatchError,
  type Lock,
  type LockHandle,
} from '../../src/index.js';
import { LocalLockClient } from '../../src/local/index.js';

let unique = 0;
const name = (label: string) => `local-${label}-${++unique}`;

/**
 * Contenders on two clients of one process (as two modules of one app), each taking `lock(i)` for a
 * few sections that yield to the event loop inside; the history is what they did, checked by the
 * history checker — never what the locks believe.
 */
async function contend(
  locks: Array<(i: number) => { lock: Lock; mode: 'x' | 'r' | 'w' | 'p'; permits?: number }>,
  contenders: number,
  sections: number,
): Promise<HistoryEvent[]> {
  const events: HistoryEvent[] = [];
  const at = () => String(process.hrtime.bigint());
  const one = async (proc: string, pick: (typeof locks)[number], i: number) => {
    for (let s = 0; s < sections; s++) {
      const { lock, mode, permits } = pick(i);
      events.push({ proc, type: 'invoke', f: 'acquire', lock: 'L', mode, permits, t: at() } as HistoryEvent);
      const handle = await lock.acquire();
      events.push({
        proc,
        type: 'ok',
        f: 'acquire',
        lock: 'L',
        owner: handle.owner,
        token: handle.fencingToken,
        t: at(),
      } as HistoryEvent);
      await new Promise((resolve) => setImmediate(resolve)); // others run while it holds
      events.push({ proc, type: 'invoke', f: 'release', lock: 'L', t: at() } as HistoryEvent);
      await handle.release();
      events.push({ proc, type: 'ok', f: 'release', lock: 'L', t: at() } as HistoryEvent);
    }
  };
  // Every contender starts before any is awaited.
  await Promise.all(Array.from({ length: contenders }, (_, i) => one(`p${i}`, locks[i % locks.length]!, i)));
  return events;
}

describe('the local (in-process) backend', () => {
  const a = new LocalLockClient();
  const b = new LocalLockClient();

  it.each(['mutex', 'reentrant', 'fair', 'spin'] as const)(
    '%s: one holder at a time across clients of one process, tokens in order',
    async (kind) => {
      const n = name(kind);
      const events = await contend(
        [() => ({ lock: a[kind](n), mode: 'x' }), () => ({ lock: b[kind](n), mode: 'x' })],
        8,
        5,
      );
      const report = checkLockHistory(events, { strict: true });
      expect(report.checks.exclusion.violations).toEqual([]);
      expect(report.valid).toBe(true);
    },
  );

  it('the checker is seen to catch overlap: the same run without a lock', async () => {
    let owners = 0;
    const free = {
      acquire: async () => ({
        owner: `nobody-${++owners}`,
        fencingToken: owners,
        release: async () => 'released',
      }),
    } as unknown as Lock;
    const events = await contend([() => ({ lock: free, mode: 'x' })], 4, 2);
    expect(checkLockHistory(events, { strict: true }).checks.exclusion.valid).toBe(false);
  });

  it('read-write: writers alone, readers together; a waiting writer keeps new readers out', async () => {
    const n = name('rw');
    const events = await contend(
      [
        (i) =>
          i % 3 === 0 ? { lock: a.readWrite(n).write, mode: 'w' } : { lock: a.readWrite(n).read, mode: 'r' },
        (i) =>
          i % 3 === 0 ? { lock: b.readWrite(n).write, mode: 'w' } : { lock: b.readWrite(n).read, mode: 'r' },
      ],
      9,
      4,
    );
    expect(checkLockHistory(events, { strict: true }).valid).toBe(true);
    const read = await a.readWrite(n).read.acquire();
    const writer = b.readWrite(n).write.acquire({ waitMs: 10_000 });
    // In one process the writer's tries run to their end within this turn of the event loop.
    await new Promise((resolve) => setImmediate(resolve));
    await expect(b.readWrite(n).read.tryAcquire({ waitMs: 0 })).resolves.toBeUndefined();
    await read.release();
    await (await writer).release();
  });

  it('read-write: no upgrade (refused at once), downgrade allowed', async () => {
    const n = name('upgrade');
    const rw = a.readWrite(n);
    await rw.read.run(async () => {
      await expect(rw.write.acquire()).rejects.toBeInstanceOf(LockUpgradeError);
    });
    await rw.write.run(async () => {
      const read = await rw.read.acquire();
      expect(read.fencingToken).toBeGreaterThan(0);
      await read.release();
    });
  });

  it('semaphore: at most its permits, a stored count every client must share', async () => {
    const n = name('sem');
    const events = await contend(
      [
        () => ({ lock: a.semaphore(n, { permits: 3 }), mode: 'p', permits: 3 }),
        () => ({ lock: b.semaphore(n, { permits: 3 }), mode: 'p', permits: 3 }),
      ],
      10,
      4,
    );
    expect(checkLockHistory(events, { strict: true }).valid).toBe(true);
    const held = await a.semaphore(n, { permits: 3 }).acquire();
    await expect(b.semaphore(n, { permits: 4 }).acquire()).rejects.toBeInstanceOf(PermitsMismatchError);
    await held.release();
  });

  it('fair: granted in arrival order across clients', async () => {
    const n = name('fair-order');
    const first = await a.fair(n).acquire();
    const order: string[] = [];
    const waiters = ['w1', 'w2', 'w3', 'w4'].map((w, i) =>
      (i % 2 ? b : a)
        .fair(n)
        .acquire({ owner: w })
        .then(async (h: LockHandle) => {
          order.push(w);
          await h.release();
        }),
    );
    await expect.poll(async () => (await a.fair(n).inspect()).held).toBe(true);
    await new Promise((resolve) => setImmediate(resolve)); // every waiter has queued
    await first.release();
    await Promise.all(waiters);
    expect(order).toEqual(['w1', 'w2', 'w3', 'w4']);
  });

  it("an explicit lease ends: the holder's signal aborts and another client takes the lock", async () => {
    const n = name('lease');
    const held = await a.mutex(n).acquire({ leaseMs: 50 });
    const next = await b.mutex(n).acquire({ waitMs: 5_000 });
    expect(held.signal.aborted).toBe(true);
    expect((held.signal.reason as LockLostError).reason).toBe('lease_ended');
    expect(next.fencingToken).toBeGreaterThan(held.fencingToken);
    expect(await held.release()).toBe('not_owner');
    await next.release();
  });

  it('a latch releases every waiter at zero; an election has one leader', async () => {
    const n = name('latch');
    const latch = a.countDownLatch(n);
    expect(await latch.trySetCount(2)).toBe(true);
    const waiting = b.countDownLatch(n).wait({ waitMs: 5_000 });
    await latch.countDown();
    await b.countDownLatch(n).countDown();
    await expect(waiting).resolves.toBe(true);

    const e = name('election');
    const term = await a.election(e).campaign('a');
    const other = b.election(e).campaign('b', { waitMs: 5_000 });
    expect(await b.election(e).leader()).toEqual({ value: 'a', fencingToken: term.fencingToken });
    await term.resign();
    const next = await other;
    expect(next.fencingToken).toBeGreaterThan(term.fencingToken);
    await next.resign();
  });

  it('every pending acquire of a closed client rejects with LockClientClosedError', async () => {
    // The holders are another client: nothing the closed one does releases them. 20 closes, each at
    // another moment of its waiters' acquires (first tries in flight, queued, asleep).
    const n = name('closed');
    const kinds: Array<(client: LocalLockClient) => Lock> = [
      (c) => c.mutex(`${n}:m`),
      (c) => c.reentrant(`${n}:r`),
      (c) => c.fair(`${n}:f`),
      (c) => c.readWrite(`${n}:rw`).read,
      (c) => c.semaphore(`${n}:s`, { permits: 1 }),
    ];
    const holds = await Promise.all([
      ...kinds.filter((_, i) => i !== 3).map((kind) => kind(a).acquire()),
      a.readWrite(`${n}:rw`).write.acquire(),
    ]);
    for (let round = 0; round < 20; round++) {
      const closing = new LocalLockClient();
      const outcomes = kinds.flatMap((kind) =>
        [kind(closing), kind(closing)].map((lock) =>
          lock.acquire().then(
            () => 'acquired',
            (error: unknown) => error,
          ),
        ),
      );
      if (round % 3 === 1) await new Promise((resolve) => setImmediate(resolve));
      else if (round % 3 === 2) await new Promise((resolve) => setTimeout(resolve, round));
      await closing.close();
      for (const outcome of await Promise.all(outcomes)) {
        expect(outcome, `round ${round}`).toBeInstanceOf(LockClientClosedError);
      }
    }
    await Promise.all(holds.map((hold) => hold.release()));
  });

  it("namespaces do not share locks (nor do processes: the store is this process's memory)", async () => {
    const n = name('ns');
    const other = new LocalLockClient({ namespace: 'elsewhere' });
    const held = await a.mutex(n).acquire();
    const there = await other.mutex(n).tryAcquire();
    expect(there).toBeDefined();
    await Promise.all([held.release(), there?.release()]);
    await other.close();
  });
});
