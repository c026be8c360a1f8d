import { Redis } from 'ioredis';
import { describe, expect, it } from 'vitest';
import { checkLockHistory, type HistoryEvent } from '../../src/checker/index.js';
import { RedisFencedStore } from '../../src/index.js';
import { reportRow } from '../helpers/fault-report.js';
import { forkFixtures } from '../helpers/processes.js';
import { HistoryRecorder } from '../helpers/recorder.js';
import { useRedis } from '../helpers/redis.js';

const env = useRedis();

/**
 * Fault row "holder paused past its lease" (RELIABILITY.md §3), for real: a holder process is stopped
 * (SIGSTOP) while it holds a Redis mutex with a 500 ms lease, another client takes the lock once the
 * lease ends, then the holder is resumed (SIGCONT) and writes as if it still held it. A lease lock
 * cannot prevent that — the design is unsafe by nature under pauses — so the test asserts that the
 * checker FOUND the double holding (the fault really happened), and that the fenced resource rejected
 * the stale write (the safety lockstock promises, at the resource).
 */
describe('fault: a holder paused past its lease', () => {
  it('two processes believe they hold the lock; the fenced resource accepts only the newer one', async () => {
    const name = 'fault-paused';
    const [holder] = forkFixtures('paused-holder.mjs', [
      [JSON.stringify({ url: env.server.url, name, leaseMs: 500 })],
    ]);
    const redis = new Redis(env.server.url);
    try {
      const { token: pausedToken } = await holder!.next('holding');
      holder!.kill('SIGSTOP');
      const recorder = new HistoryRecorder();
      const resource = `resource:${name}`;
      // Another client asks at once; it gets the lock when the paused holder's lease ends.
      const second = await recorder.acquire('second', name, () =>
        env.locks().mutex(name).acquire({ owner: 'second', waitMs: 10_000 }),
      );
      expect(second.fencingToken).toBeGreaterThan(pausedToken as number);
      const store = new RedisFencedStore(redis);
      expect(await recorder.write(store, resource, 'from second', second)).toBe(true);

      // The paused holder resumes, still holding its handle, and writes under its old token.
      holder!.kill('SIGCONT');
      holder!.send({ type: 'write' });
      const done = await holder!.next('done');
      expect(done.accepted).toBe(false); // the store refused the stale token
      expect(done.signalAborted).toBe(true); // its signal said so: a careful holder would have stopped
      recorder.resourceAnswered(resource, false, {
        fencingToken: pausedToken as number,
        owner: `holder-${holder!.child.pid}`,
      });
      await recorder.release('second', name, second);

      const history = recorder.merged(done.events as HistoryEvent[]);
      // How long the clients actually acted as holders (strict: ignoring what the lease allowed):
      // they overlapped — the checker finds it.
      const strict = checkLockHistory(history, { strict: true });
      expect(strict.checks.exclusion.valid).toBe(false);
      expect(strict.checks.exclusion.violations[0]?.owners).toEqual(
        expect.arrayContaining(['second', `holder-${holder!.child.pid}`]),
      );
      // Within what each lease allowed, nobody overlapped (the holder's belief ended with its lease)…
      expect(checkLockHistory(history).checks.exclusion.valid).toBe(true);
      // …and at the resource, the stale write was refused and nothing stale was accepted.
      expect(strict.checks.fence).toMatchObject({ valid: true, acceptedStale: 0, rejectedStale: 1 });
      expect(strict.checks.tokens.valid).toBe(true);
      expect(await store.read(resource)).toBe('from second');
      reportRow({
        row: 'holder-paused',
        backend: 'redis',
        fault:
          'a holder process SIGSTOPped past its 500 ms lease; another client takes the lock; the holder resumes (SIGCONT) and writes',
        expected: ['VIOL', 'F-OK'],
        observed:
          "two processes acted as holders at once (strict mode: how long they acted) — none within what their leases allowed, the resumed holder's signal had aborted; its stale write refused, nothing stale accepted",
        file: 'test/faults/paused-holder.test.ts',
        checker: strict,
      });
    } finally {
      holder!.kill('SIGCONT');
      holder!.kill('SIGKILL');
      redis.disconnect();
    }
  });
});
