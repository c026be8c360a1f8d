import { mkdtempSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { checkLockHistory } from '../../src/checker/index.js';
import { buildClockShift } from '../helpers/clock-shift.js';
import { mergeHistories, useFixtures } from '../helpers/crash.js';
import { reportRow } from '../helpers/fault-report.js';
import { HistoryRecorder } from '../helpers/recorder.js';
import { useRedis } from '../helpers/redis.js';

const env = useRedis();
const shim = buildClockShift();
const fixtures = useFixtures();
const dir = mkdtempSync(join(tmpdir(), 'lockstock-client-clock-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const JUMP_MS = 60_000;
const WATCHDOG_MS = 900;

/**
 * Fault row "a client's clock jumps" (RELIABILITY.md §3, row 6, the client half): the holder process
 * runs under the clock-shift shim and its wall clock (Date.now, gettimeofday) jumps 60 s back, then
 * 60 s forward, while it holds a watchdog-renewed lock (900 ms leases). Redis keeps leases and permit
 * scores on its own clock and the client measures validity on the monotonic one, so nothing may
 * change: the holder keeps renewing, its signal never aborts, and another client is refused
 * throughout — for the mutex and for a one-permit semaphore (whose permits a client-time score would
 * have let a second holder take after a backward jump).
 */
describe.skipIf(shim.skip !== undefined)("fault: a client's wall clock jumps while it holds a lock", () => {
  for (const kind of ['mutex', 'semaphore'] as const) {
    it(`${kind}: the holder keeps its lock through ±60 s jumps of its own clock; nobody else gets it`, async () => {
      const name = `fault-client-clock-${kind}`;
      const offsetFile = join(dir, `${kind}.ms`);
      const shift = (ms: number) => {
        writeFileSync(`${offsetFile}.next`, `${ms}\n`);
        renameSync(`${offsetFile}.next`, offsetFile);
      };
      shift(0);
      const history = fixtures.historyFile(name);
      const holder = fixtures.fork(
        'clock-jumped-holder.mjs',
        { url: env.server.url, name, kind, watchdogTimeoutMs: WATCHDOG_MS, history },
        { LD_PRELOAD: shim.library!, LOCKSTOCK_CLOCK_SHIFT_FILE: offsetFile },
      );
      const ask = async (type: 'wall' | 'status') => {
        holder.send({ type });
        return holder.next(type);
      };
      const { token, owner } = await holder.next('holding');
      const other = env.locks();
      const lock = kind === 'semaphore' ? other.semaphore(name, { permits: 1 }) : other.mutex(name);
      const recorder = new HistoryRecorder();
      let refusals = 0;
      const skews: number[] = [];
      for (const jump of [-JUMP_MS, JUMP_MS]) {
        shift(jump);
        recorder.fault('clock-jump', owner, { ms: jump });
        const { now } = await ask('wall');
        skews.push((now as number) - Date.now());
        expect(Math.abs((now as number) - Date.now() - jump)).toBeLessThan(5_000); // its clock really moved
        const { renewals: before } = await ask('status');
        // Three renewals after the jump (one every third of the lease), each try of the other refused.
        await expect
          .poll(
            async () => {
              recorder.record({ proc: 'other', type: 'invoke', f: 'acquire', lock: name });
              const got = await lock.tryAcquire({ owner: 'other' });
              if (got) {
                recorder.record({
                  proc: 'other',
                  type: 'ok',
                  f: 'acquire',
                  lock: name,
                  owner: 'other',
                  token: got.fencingToken,
                });
                return 'taken';
              }
              recorder.record({ proc: 'other', type: 'fail', f: 'acquire', lock: name });
              refusals++;
              return ((await ask('status')).renewals as number) - (before as number);
            },
            { timeout: 20_000, interval: 100 },
          )
          .toBeGreaterThanOrEqual(3);
      }
      shift(0);
      holder.send({ type: 'release' });
      const released = await holder.next('released');
      expect(released.outcome).toBe('released');
      expect(released.lost).toBeUndefined(); // its signal never aborted
      const next = await recorder.acquire('other', name, () =>
        lock.acquire({ owner: 'other', waitMs: 5_000 }),
      );
      expect(next.fencingToken).toBeGreaterThan(token as number);
      await recorder.release('other', name, next);
      const report = checkLockHistory(
        mergeHistories(
          recorder.events,
          fixtures.histories().filter((e) => e.proc === owner),
        ),
        {
          strict: true,
        },
      );
      expect(report.valid).toBe(true);
      reportRow({
        row: kind === 'semaphore' ? 'client-clock-jump-semaphore' : 'client-clock-jump',
        backend: 'redis',
        fault: `the holder's wall clock jumps ${JUMP_MS / 1_000} s back, then ${JUMP_MS / 1_000} s forward (LD_PRELOAD shim on the client process) while it holds a ${kind === 'semaphore' ? 'one-permit semaphore' : 'mutex'} renewed by its watchdog (${WATCHDOG_MS} ms leases)`,
        expected: ['OK'],
        observed: `its Date.now() ran ${skews.map((s) => `${s > 0 ? '+' : ''}${(s / 1_000).toFixed(1)} s`).join(', then ')} off the machine's; it renewed ${String(released.renewals)} times in all and never lost the lock (Redis keeps leases${kind === 'semaphore' ? ' and permit scores' : ''} on its own clock, the client validity on the monotonic one); the other client was refused ${refusals} times, then got the lock after the release`,
        file: 'test/faults/client-clock-jump.test.ts',
        checker: report,
        figures: { renewals: released.renewals as number, refusals },
      });
    });
  }
});
