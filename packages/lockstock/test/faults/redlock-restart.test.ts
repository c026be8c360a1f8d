import { describe, expect, it } from 'vitest';
import { checkLockHistory } from '../../src/checker/index.js';
import { LockTimeoutError } from '../../src/index.js';
import { reportRow } from '../helpers/fault-report.js';
import { HistoryRecorder } from '../helpers/recorder.js';
import { useRedlockLab, type RedlockLab } from '../helpers/redlock-lab.js';

const lab = useRedlockLab();
const C = 2; // the master that restarts: A, B, C, D, E = masters 0..4

/**
 * Kleppmann's schedule for a Redlock master restarting (RELIABILITY.md §3, row 3; [S10]): client 1
 * cannot reach D and E, so it holds the lock on exactly A, B and C; C restarts; client 2 cannot reach
 * A and B and asks C, D and E. Each client talks to each master through its own fault proxy.
 */
async function schedule(bench: RedlockLab, name: string, leaseMs: number) {
  const one = await bench.client({ linked: true });
  const history = new HistoryRecorder();
  one.links[3]!.set('blackhole');
  one.links[4]!.set('blackhole');
  const first = await history.acquire('client1', name, () =>
    one.client.mutex(name).acquire({ owner: 'client1', leaseMs }),
  );
  history.watch('client1', name, first);
  // The fault's precondition, checked: client 1's votes are on A, B and C only.
  const pttls = await Promise.all([0, 1, 2, 3, 4].map((i) => bench.pttl(i, name)));
  expect(pttls.map((pttl) => pttl > 0)).toEqual([true, true, true, false, false]);
  expect(await history.write(lab.store, name, 'client1', first)).toBe(true);
  /** Client 2, connected after the restart (a client that was connected may still be in ioredis' back-off). */
  const clientTwo = async () => {
    const two = await bench.client({ linked: true });
    two.links[0]!.set('blackhole');
    two.links[1]!.set('blackhole');
    return two;
  };
  return { history, first, clientTwo };
}

describe('fault: a Redlock master restarts under a held lock', () => {
  it('without persistence, at once: two clients hold the lock (the checker finds it); the fenced resource refuses the stale write', async () => {
    const bench = await lab.start();
    const name = 'rl-restart-empty';
    try {
      const { history, first, clientTwo } = await schedule(bench, name, 10_000);
      await bench.master(C).restart(); // SIGKILL, started again at once with nothing
      history.fault('C restarted empty');
      expect(await bench.pttl(C, name)).toBe(-2); // C forgot client 1's vote

      const two = await clientTwo();
      const second = await history.acquire('client2', name, () =>
        two.client.mutex(name).acquire({ owner: 'client2', waitMs: 5_000 }),
      );
      expect(first.signal.aborted).toBe(false); // client 1 still believes it holds the lock, rightly by its lease
      expect(second.fencingToken).toBeGreaterThan(first.fencingToken); // tokens from PostgreSQL
      expect(await history.write(lab.store, name, 'client2', second)).toBe(true);
      expect(await history.write(lab.store, name, 'client1 again', first)).toBe(false); // stale: refused
      await history.release('client2', name, second);
      await history.release('client1', name, first);

      const report = checkLockHistory(history.events);
      // Unsafe by design without fencing: two believed holders at once — found, so the fault happened.
      expect(report.checks.exclusion.valid).toBe(false);
      expect(report.checks.exclusion.violations[0]?.owners).toEqual(['client1', 'client2']);
      expect(report.checks.tokens.valid).toBe(true);
      expect(report.checks.fence).toMatchObject({ valid: true, acceptedStale: 0, rejectedStale: 1 });
      expect(await lab.store.read(name)).toBe('client2');
      reportRow({
        row: 'redlock-restart-empty',
        backend: 'redlock',
        fault:
          "a master restarts empty at once under a held lock, on Kleppmann's schedule (client 1 holds A, B, C; C restarts; client 2 asks C, D, E)",
        expected: ['VIOL', 'F-OK'],
        observed:
          'both clients held the lock at once (the checker found the overlap of client1 and client2); the ' +
          "fenced resource refused client 1's write after client 2's, and accepted nothing stale",
        file: 'test/faults/redlock-restart.test.ts',
        checker: report,
      });
    } finally {
      await bench.stop();
    }
  });

  it('with appendfsync always, at once: C still has the vote, client 2 is refused, exclusion holds', async () => {
    const bench = await lab.start({
      args: (i) => (i === C ? ['--appendonly', 'yes', '--appendfsync', 'always'] : []),
    });
    const name = 'rl-restart-fsync';
    try {
      const { history, first, clientTwo } = await schedule(bench, name, 10_000);
      const pid = bench.master(C).pid;
      await bench.master(C).restart(); // SIGKILL, started again at once on its AOF
      expect(bench.master(C).pid).not.toBe(pid); // the fault happened
      const pttl = await bench.pttl(C, name);
      expect(pttl).toBeGreaterThan(0); // the vote survived, its lease still running
      expect(pttl).toBeLessThanOrEqual(10_000);

      const two = await clientTwo();
      const refused = await history
        .acquire('client2', name, () => two.client.mutex(name).acquire({ owner: 'client2', waitMs: 2_000 }))
        .catch((e: unknown) => e);
      expect(refused).toBeInstanceOf(LockTimeoutError); // 2 of 5 (D, E) at most: never a majority
      expect(await history.write(lab.store, name, 'client1 again', first)).toBe(true);
      await history.release('client1', name, first);

      const report = checkLockHistory(history.events);
      expect(report.checks.exclusion).toEqual({ valid: true, violations: [] });
      expect(report.checks.fence).toMatchObject({ valid: true, acceptedStale: 0, rejectedStale: 0 });
      reportRow({
        row: 'redlock-restart-fsync-always',
        backend: 'redlock',
        fault: 'the same schedule, the restarting master on `appendonly yes`, `appendfsync always`',
        expected: ['OK'],
        observed: `C came back with client 1's vote (PTTL ${pttl} ms): client 2 got 2 of 5 and timed out; no overlap`,
        file: 'test/faults/redlock-restart.test.ts',
        checker: report,
      });
    } finally {
      await bench.stop();
    }
  });

  it('without persistence, delayed past the lease: client 1 knew it lost the lock before client 2 got it', async () => {
    const bench = await lab.start();
    const name = 'rl-restart-delayed';
    try {
      const { history, first, clientTwo } = await schedule(bench, name, 2_000);
      await bench.master(C).kill();
      // The delayed restart of the Redis spec: C stays down until every lease it granted has ended.
      if (!first.signal.aborted) {
        await new Promise((resolve) => first.signal.addEventListener('abort', resolve, { once: true }));
      }
      await bench.master(C).restart();
      const two = await clientTwo();
      const second = await history.acquire('client2', name, () =>
        two.client.mutex(name).acquire({ owner: 'client2', waitMs: 5_000 }),
      );
      expect(await history.write(lab.store, name, 'client2', second)).toBe(true);
      expect(await history.write(lab.store, name, 'client1 late', first)).toBe(false);
      await history.release('client2', name, second);

      const report = checkLockHistory(history.events);
      expect(report.checks.exclusion).toEqual({ valid: true, violations: [] });
      expect(report.checks.fence).toMatchObject({ valid: true, acceptedStale: 0, rejectedStale: 1 });
      reportRow({
        row: 'redlock-restart-delayed',
        backend: 'redlock',
        fault: 'the same schedule, the master restarted empty only after the 2 s lease it granted had ended',
        expected: ['OK'],
        observed:
          "client 1's lease ended (its signal aborted) before client 2 got C, D, E: no overlap; client 1's late write refused",
        file: 'test/faults/redlock-restart.test.ts',
        checker: report,
      });
    } finally {
      await bench.stop();
    }
  });
});
