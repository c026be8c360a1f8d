import { Redis } from 'ioredis';
import { describe, expect, it } from 'vitest';
import { checkLockHistory } from '../../src/checker/index.js';
import { LockTimeoutError } from '../../src/index.js';
import { buildClockShift, ShiftedRedis } from '../helpers/clock-shift.js';
import { reportRow } from '../helpers/fault-report.js';
import { HistoryRecorder } from '../helpers/recorder.js';
import { useRedlockLab, type RedlockLab } from '../helpers/redlock-lab.js';

const lab = useRedlockLab();
const shim = buildClockShift();
const C = 2; // the master whose clock jumps: A, B, C, D, E = masters 0..4
const LEASE_MS = 10_000;
const JUMP_MS = 15_000; // past the lease: C's copy of the lock expires at once

/** Redlock on five masters, C under the clock-shift shim. */
async function benchWithShiftedC(): Promise<{ bench: RedlockLab; c: ShiftedRedis }> {
  let c: ShiftedRedis | undefined;
  const bench = await lab.start({
    custom: {
      [C]: async () => (c = await ShiftedRedis.start(shim.library!)),
    },
  });
  return { bench, c: c! };
}

/** Jumps C's wall clock and proves it jumped: C's TIME is ahead of A's, and C lost the lock's key. */
async function jump(bench: RedlockLab, c: ShiftedRedis, name: string): Promise<number> {
  const [a, shifted] = [new Redis(bench.urls[0]!), new Redis(c.url)];
  try {
    expect(await bench.pttl(C, name)).toBeGreaterThan(0);
    c.shift(JUMP_MS);
    const seconds = async (redis: Redis) => Number((await redis.time())[0]);
    const ahead = (await seconds(shifted)) - (await seconds(a));
    expect(ahead).toBeGreaterThanOrEqual(JUMP_MS / 1000 - 1); // the server's clock really jumped
    expect(await bench.pttl(C, name)).toBe(-2); // and the vote it gave expired with it
    return ahead;
  } finally {
    a.disconnect();
    shifted.disconnect();
  }
}

/**
 * Fault row "a clock jump on one Redlock master" (RELIABILITY.md §3, row 6): a master's wall clock
 * jumps forward past the lease (Redis expires keys on the wall clock, not a monotonic one), so its
 * vote for the holder disappears. With five masters and a quorum of three, one master's jump cannot
 * give a second client a majority — unless the first holds exactly three votes, as on Kleppmann's
 * schedule, where the jump is as bad as a restart without persistence. The shim is compiled by this
 * file (cc -shared -fPIC); libfaketime cannot run Debian's jemalloc-linked redis-server.
 */
if (shim.skip !== undefined) it.skip(`clock-jump rows skipped: ${shim.skip}`, () => undefined);
describe.skipIf(shim.skip !== undefined)('fault: a clock jump on one Redlock master', () => {
  it('holder on all five: the jumped master loses its vote, but nobody else reaches a majority', async () => {
    const { bench, c } = await benchWithShiftedC();
    const name = 'rl-jump-five';
    try {
      const [one, two] = await Promise.all([bench.client(), bench.client()]);
      const history = new HistoryRecorder();
      const first = await history.acquire('client1', name, () =>
        one.client.mutex(name).acquire({ owner: 'client1', leaseMs: LEASE_MS }),
      );
      history.watch('client1', name, first);
      expect(await history.write(lab.store, name, 'client1', first)).toBe(true);
      const ahead = await jump(bench, c, name);
      history.fault(`C +${JUMP_MS} ms`);

      const refused = await history
        .acquire('client2', name, () => two.client.mutex(name).acquire({ owner: 'client2', waitMs: 2_000 }))
        .catch((e: unknown) => e);
      expect(refused).toBeInstanceOf(LockTimeoutError); // C said yes; A, B, D, E still hold it for client 1
      expect(first.signal.aborted).toBe(false);
      expect(await history.write(lab.store, name, 'client1 again', first)).toBe(true);
      await history.release('client1', name, first);

      const report = checkLockHistory(history.events);
      expect(report.checks.exclusion).toEqual({ valid: true, violations: [] });
      expect(report.checks.fence).toMatchObject({ valid: true, acceptedStale: 0, rejectedStale: 0 });
      reportRow({
        row: 'redlock-clock-jump',
        backend: 'redlock',
        fault: `one master's wall clock jumps +${JUMP_MS / 1000} s (LD_PRELOAD shim) under a lock held on all five (lease ${LEASE_MS / 1000} s)`,
        expected: ['OK'],
        observed: `the master's TIME ran ${ahead} s ahead and its copy of the lock expired (PTTL -2); a second client got 1 vote of 5 and timed out; no overlap`,
        file: 'test/faults/redlock-clock-jump.test.ts',
        checker: report,
        figures: { serverAheadS: ahead },
      });
    } finally {
      await bench.stop();
    }
  });

  it("Kleppmann's schedule (client 1 holds A, B, C; C jumps; client 2 asks C, D, E): two holders, the checker finds them; the fenced resource refuses the stale write", async () => {
    const { bench, c } = await benchWithShiftedC();
    const name = 'rl-jump-three';
    try {
      const one = await bench.client({ linked: true });
      const history = new HistoryRecorder();
      one.links[3]!.set('blackhole');
      one.links[4]!.set('blackhole');
      const first = await history.acquire('client1', name, () =>
        one.client.mutex(name).acquire({ owner: 'client1', leaseMs: LEASE_MS }),
      );
      history.watch('client1', name, first);
      const pttls = await Promise.all([0, 1, 2, 3, 4].map((i) => bench.pttl(i, name)));
      expect(pttls.map((pttl) => pttl > 0)).toEqual([true, true, true, false, false]);
      expect(await history.write(lab.store, name, 'client1', first)).toBe(true);
      const ahead = await jump(bench, c, name);

      const two = await bench.client({ linked: true });
      two.links[0]!.set('blackhole');
      two.links[1]!.set('blackhole');
      const second = await history.acquire('client2', name, () =>
        two.client.mutex(name).acquire({ owner: 'client2', waitMs: 5_000 }),
      );
      expect(first.signal.aborted).toBe(false); // client 1 still believes, by its own (monotonic) lease
      expect(await history.write(lab.store, name, 'client2', second)).toBe(true);
      expect(await history.write(lab.store, name, 'client1 again', first)).toBe(false);
      await history.release('client2', name, second);
      await history.release('client1', name, first);

      const report = checkLockHistory(history.events);
      expect(report.checks.exclusion.valid).toBe(false); // the violation really happened, and was found
      expect(report.checks.exclusion.violations[0]?.owners).toEqual(['client1', 'client2']);
      expect(report.checks.fence).toMatchObject({ valid: true, acceptedStale: 0, rejectedStale: 1 });
      expect(await lab.store.read(name)).toBe('client2');
      reportRow({
        row: 'redlock-clock-jump-3-votes',
        backend: 'redlock',
        fault: `the same jump on Kleppmann's schedule: client 1 holds exactly A, B, C (D, E unreachable for it); C jumps; client 2 (A, B unreachable) asks`,
        expected: ['VIOL', 'F-OK'],
        observed: `C ran ${ahead} s ahead and dropped client 1's vote; client 2 got C, D, E: both held the lock (found by the checker); client 1's later write refused, nothing stale accepted`,
        file: 'test/faults/redlock-clock-jump.test.ts',
        checker: report,
        figures: { serverAheadS: ahead },
      });
    } finally {
      await bench.stop();
    }
  });
});
