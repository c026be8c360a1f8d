import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { checkLockHistory, checkLinearizable, mutexModel, operationsOf } from '../../src/checker/index.js';
import { QuorumUnavailableError, type LockHandle, type RedlockClient } from '../../src/index.js';
import { reportRow } from '../helpers/fault-report.js';
import { HistoryRecorder } from '../helpers/recorder.js';
import { useRedlockLab } from '../helpers/redlock-lab.js';

const lab = useRedlockLab();
const tick = () => new Promise((resolve) => setImmediate(resolve));
/** A process's state letter from /proc (T: stopped). */
const processState = (pid: number) => readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]?.[0];

/**
 * `contenders` clients run `sections` critical sections each on one Redlock mutex, all started before
 * any is awaited. A section reads the fenced counter, yields, and writes it + 1 under its token: only
 * exclusion keeps the count exact, and the fenced store refuses a write from anyone but the newest
 * holder. Everything is recorded in `history`.
 */
async function contend(
  history: HistoryRecorder,
  clients: readonly RedlockClient[],
  name: string,
  sections: number,
): Promise<void> {
  await Promise.all(
    clients.map(async (client, c) => {
      const proc = `c${c}`;
      for (let i = 0; i < sections; i++) {
        const handle = await history.acquire(proc, name, () =>
          client.mutex(name).acquire({ waitMs: 30_000 }),
        );
        const count = Number((await lab.store.read(name)) ?? 0);
        await tick();
        await history.write(lab.store, name, String(count + 1), handle);
        await history.release(proc, name, handle);
      }
    }),
  );
}

/** Fault rows "Redlock with 1 of 5 and 3 of 5 masters down" (RELIABILITY.md §3, row 5). */
describe('fault: Redlock masters down', () => {
  for (const how of ['SIGKILL', 'SIGSTOP'] as const) {
    it(`1 of 5 masters down (${how}): locks are still granted, exclusive, and the checker is clean`, async () => {
      const bench = await lab.start();
      const name = `rl-one-down-${how.toLowerCase()}`;
      try {
        const clients = await Promise.all([1, 2, 3].map(() => bench.client()));
        // Every client's five connections are up before the fault.
        await Promise.all(
          clients.map(async ({ client }) => (await client.mutex('warm').acquire()).release()),
        );
        if (how === 'SIGKILL') await bench.master(2).kill();
        else bench.master(2).signal('SIGSTOP'); // hung: connections stay open, nothing answers

        const history = new HistoryRecorder();
        // One acquire alone first: what the fault costs it (a hung master: its vote's timeout).
        const alone = performance.now();
        const aloneHandle = await clients[0]!.client.mutex('alone').acquire();
        const aloneMs = performance.now() - alone;
        await aloneHandle.release();
        const sections = 4;
        const startedAt = performance.now();
        await contend(
          history,
          clients.map((c) => c.client),
          name,
          sections,
        );

        const contendMs = performance.now() - startedAt;
        const granted = history.events.filter((e) => e.f === 'acquire' && e.type === 'ok');
        expect(granted).toHaveLength(3 * sections); // available: every acquire was granted
        expect(await lab.store.read(name)).toBe(String(3 * sections)); // no update lost
        const report = checkLockHistory(history.events);
        expect(report.checks.exclusion).toEqual({ valid: true, violations: [] });
        expect(report.checks.tokens).toEqual({ valid: true, violations: [] });
        expect(report.checks.fence).toMatchObject({ valid: true, acceptedStale: 0, rejectedStale: 0 });
        const locks = history.events.filter((e) => e.src !== 'resource');
        const linearizable = checkLinearizable(operationsOf(locks), mutexModel({ fenced: true }));
        expect(linearizable.valid).toBe(true);
        // The fault lasted throughout: the master is still dead, or still stopped.
        if (how === 'SIGKILL') expect(bench.master(2).running).toBe(false);
        else expect(processState(bench.master(2).pid!)).toBe('T');
        reportRow({
          row: `redlock-1-of-5-${how === 'SIGKILL' ? 'killed' : 'hung'}`,
          backend: 'redlock',
          fault: `1 of 5 masters ${how === 'SIGKILL' ? 'SIGKILLed' : 'SIGSTOPped (hung: connections open, no answers)'}; 3 clients run 4 fenced read-modify-write sections each on one lock`,
          expected: ['OK'],
          observed:
            `all ${granted.length} acquires granted, the fenced counter exact (${3 * sections}), no overlap, ` +
            `tokens growing, nothing refused; linearizable as a fenced mutex; an acquire alone took ` +
            `${Math.round(aloneMs)} ms${how === 'SIGSTOP' ? " (the hung master's 300 ms vote timeout)" : ''}`,
          file: 'test/faults/redlock-masters-down.test.ts',
          checker: report,
          figures: { acquireAloneMs: Math.round(aloneMs), sectionsMs: Math.round(contendMs) },
        });
      } finally {
        await bench.stop();
      }
    });
  }

  it('3 of 5 masters down: every acquire fails with QuorumUnavailableError well before its wait, the holder learns it lost the lock, nobody else holds it', async () => {
    const bench = await lab.start();
    const name = 'rl-three-down';
    try {
      // The holder renews every 500 ms (lease 1.5 s).
      const holder = await bench.client({ watchdogTimeoutMs: 1_500 });
      const others = await Promise.all([1, 2, 3].map(() => bench.client()));
      await Promise.all(others.map(async ({ client }) => (await client.mutex('warm').acquire()).release()));
      const history = new HistoryRecorder();
      const held = await history.acquire('holder', name, () => holder.client.mutex(name).acquire());
      history.watch('holder', name, held);
      expect(await history.write(lab.store, name, 'holder', held)).toBe(true);

      // Two masters crash and a third hangs: two of five answer, three are needed.
      await Promise.all([bench.master(0).kill(), bench.master(1).kill()]);
      bench.master(2).signal('SIGSTOP');
      history.fault('3 of 5 down');

      const waitMs = 20_000;
      const attempt = async (round: string) =>
        Promise.all(
          others.map(async ({ client }, c) => {
            const startedAt = performance.now();
            const error = await history
              .acquire(`c${c}-${round}`, name, () => client.mutex(name).acquire({ waitMs }))
              .then(
                (handle: LockHandle) => handle,
                (e: unknown) => e,
              );
            return { error, ms: performance.now() - startedAt };
          }),
        );
      // All three contenders ask at once, while the holder still believes it holds the lock…
      const first = await attempt('during');
      // …and the holder's next renewal cannot reach a majority: it learns it lost the lock.
      if (!held.signal.aborted) {
        await new Promise((resolve) => held.signal.addEventListener('abort', resolve, { once: true }));
      }
      // Asked again once nobody holds it: still refused, for the same reason.
      const second = await attempt('after');
      const refusals = [...first, ...second];
      for (const { error, ms } of refusals) {
        expect(error).toBeInstanceOf(QuorumUnavailableError); // typed, not a timeout
        expect((error as QuorumUnavailableError).votes.filter((v) => v.vote === 'error')).toHaveLength(3);
        expect(ms).toBeLessThan(waitMs / 2); // refused at once, not after waiting out `waitMs`
      }
      expect(held.lostError?.reason).toBeDefined();

      // The masters come back (the two killed ones empty): the lock is granted again.
      await Promise.all([bench.master(0).restart(), bench.master(1).restart()]);
      bench.master(2).signal('SIGCONT');
      history.fault('healed');
      const next = await history.acquire('next', name, () =>
        others[0]!.client.mutex(name).acquire({ waitMs }),
      );
      expect(next.fencingToken).toBeGreaterThan(held.fencingToken);
      expect(await history.write(lab.store, name, 'next', next)).toBe(true);
      await history.release('next', name, next);

      const report = checkLockHistory(history.events);
      expect(report.checks.exclusion).toEqual({ valid: true, violations: [] });
      expect(report.checks.tokens.valid).toBe(true);
      expect(report.checks.fence).toMatchObject({ valid: true, acceptedStale: 0, rejectedStale: 0 });
      // Between the fault and the heal, no acquire was granted (from what was recorded).
      const faultAt = history.events.findIndex((e) => e.fault === '3 of 5 down');
      const healedAt = history.events.findIndex((e) => e.fault === 'healed');
      const grantedDuring = history.events
        .slice(faultAt, healedAt)
        .filter((e) => e.f === 'acquire' && e.type === 'ok');
      expect(grantedDuring).toEqual([]);
      expect(
        history.events.slice(faultAt, healedAt).filter((e) => e.f === 'acquire' && e.type === 'fail'),
      ).toHaveLength(6);
      const slowest = Math.max(...refusals.map((r) => r.ms));
      reportRow({
        row: 'redlock-3-of-5-down',
        backend: 'redlock',
        fault: '3 of 5 masters down (2 SIGKILLed, 1 SIGSTOPped) under a held lock; 3 clients ask, twice',
        expected: ['UNAV'],
        observed:
          `all 6 acquires refused with QuorumUnavailableError (3 error votes each), the slowest after ` +
          `${Math.round(slowest)} ms of a 20 s wait; the holder's renewal failed and its signal aborted ` +
          `(${held.lostError?.reason}); no acquire granted until the masters were back`,
        file: 'test/faults/redlock-masters-down.test.ts',
        checker: report,
        figures: { slowestRefusalMs: Math.round(slowest) },
      });
    } finally {
      await bench.stop();
    }
  });
});
