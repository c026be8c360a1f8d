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
 * How long after the paused holder's lease ended (its `valid_until`) the waiting client may get the
 * lock, for the checker's liveness check: the waiter sleeps until the holder's lease runs out on
 * Redis (a few ms of drift after `valid_until`), then one round trip — with room for a loaded machine.
 */
const GRANT_WITHIN_NS = 2_000_000_000n;

/**
 * Fault row "holder paused past its lease" (RELIABILITY.md §3), for real: a holder process is stopped
 * (SIGSTOP) while it holds a Redis mutex with a 500 ms lease, another client takes the lock once the
 * lease ends, then the holder is resumed (SIGCONT) and writes as if it still held it. A lease lock
 * cannot prevent that — the design is unsafe by nature under pauses — so the test asserts that the
 * checker FOUND the double holding (the fault really happened), and that the fenced resource rejected
 * the stale write (the safety lockstock promises, at the resource). The same run with the fence
 * switched off (both write with a plain SET, which checks no token) is the control: each write enters
 * the history with the token its writer believed it had, and the checker's fence check must report
 * the stale write the resource took.
 */
async function pausedHolder(fence: boolean) {
  const name = `fault-paused-${fence ? 'fenced' : 'unfenced'}`;
  const [holder] = forkFixtures('paused-holder.mjs', [
    [JSON.stringify({ url: env.server.url, name, leaseMs: 500, fence })],
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
    if (fence) expect(await recorder.write(store, resource, 'from second', second)).toBe(true);
    else {
      await redis.set(resource, 'from second');
      recorder.resourceAnswered(resource, true, second); // the token it believed it wrote under
    }

    // The paused holder resumes, still holding its handle, and writes under its old token.
    holder!.kill('SIGCONT');
    holder!.send({ type: 'write' });
    const done = await holder!.next('done');
    const owner = `holder-${holder!.child.pid}`;
    expect(done.signalAborted).toBe(true); // its signal said so: a careful holder would have stopped
    recorder.resourceAnswered(resource, done.accepted as boolean, {
      fencingToken: pausedToken as number,
      owner,
    });
    await recorder.release('second', name, second);

    const history = recorder.merged(done.events as HistoryEvent[]);
    // How long the clients actually acted as holders (strict: ignoring what the lease allowed):
    // they overlapped — the checker finds it.
    const strict = checkLockHistory(history, { strict: true, grantWithinNs: GRANT_WITHIN_NS });
    expect(strict.checks.exclusion.valid).toBe(false);
    expect(strict.checks.exclusion.violations[0]?.owners).toEqual(expect.arrayContaining(['second', owner]));
    // Within what each lease allowed, nobody overlapped (the holder's belief ended with its lease)…
    expect(checkLockHistory(history).checks.exclusion.valid).toBe(true);
    expect(strict.checks.tokens.valid).toBe(true);
    // …the lock went to the waiter soon after the lease ended (liveness after the fault), and the
    // resumed holder's release changed nothing (it no longer held the lock: only holders release).
    expect(strict.checks.liveness, JSON.stringify(strict.checks.liveness)).toMatchObject({ valid: true });
    expect(strict.checks.ownership).toEqual({ valid: true, violations: [] });
    return { done, owner, pausedToken: pausedToken as number, second, strict, resource, redis };
  } finally {
    holder!.kill('SIGCONT');
    holder!.kill('SIGKILL');
  }
}

describe('fault: a holder paused past its lease', () => {
  it('two processes believe they hold the lock; the fenced resource accepts only the newer one', async () => {
    const { done, strict, resource, redis } = await pausedHolder(true);
    try {
      expect(done.accepted).toBe(false); // the store refused the stale token
      // At the resource, the stale write was refused and nothing stale was accepted.
      expect(strict.checks.fence).toMatchObject({ valid: true, acceptedStale: 0, rejectedStale: 1 });
      expect(await new RedisFencedStore(redis).read(resource)).toBe('from second');
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
      redis.disconnect();
    }
  });

  it('with the fence off, the stale write lands — and the checker itself reports it', async () => {
    const { done, owner, pausedToken, second, strict, resource, redis } = await pausedHolder(false);
    try {
      expect(done.accepted).toBe(true); // nothing refused it
      expect(await redis.get(resource)).toBe(`from ${owner}`); // the lost update, on the store
      // The checker names it from the history alone: the resource took the paused holder's write
      // under its old token after the newer holder's.
      expect(strict.checks.fence).toMatchObject({ valid: false, acceptedStale: 1, rejectedStale: 0 });
      expect(strict.checks.fence.violations).toEqual([
        {
          res: resource,
          kind: 'accepted-stale',
          owner,
          token: String(pausedToken),
          at: expect.any(String) as string,
          latest: { token: String(second.fencingToken), owner: 'second' },
        },
      ]);
      expect(strict.valid).toBe(false);
    } finally {
      redis.disconnect();
    }
  });
});

/*
 * The same pause with lock-delay (LockClientOptions.lockDelayMs): the store keeps the paused holder's
 * lease LOCK_DELAY_MS longer than the holder trusts it, so a holder resumed within that window writes
 * (unfenced, not looking at its signal) before anyone else is let in — exclusion holds by what they
 * did, not only by what the leases allowed. The pause is the fault (1.5 s, three times the lease), not
 * a synchronisation: the order is checked from the recorded history, with 13 s of margin for a
 * loaded machine to run the resumed holder's write.
 */
const LOCK_DELAY_MS = 15_000;

describe('fault: a holder paused past its lease, with lock-delay', () => {
  it('the resumed holder writes before the next holder is let in: no two holders', async () => {
    const name = 'fault-paused-lock-delay';
    const [holder] = forkFixtures('paused-holder.mjs', [
      [JSON.stringify({ url: env.server.url, name, leaseMs: 500, fence: false, lockDelayMs: LOCK_DELAY_MS })],
    ]);
    const redis = new Redis(env.server.url);
    try {
      const { token: pausedToken } = await holder!.next('holding');
      holder!.kill('SIGSTOP');
      const stoppedAt = process.hrtime.bigint();
      const recorder = new HistoryRecorder();
      const resource = `resource:${name}`;
      // Another client asks at once (as before); lock-delay keeps it out past the lease.
      const second = recorder.acquire('second', name, () =>
        env
          .locks()
          .mutex(name)
          .acquire({ owner: 'second', waitMs: LOCK_DELAY_MS + 30_000 }),
      );
      await new Promise((resolve) => setTimeout(resolve, 1_500)); // the pause: three leases long
      holder!.kill('SIGCONT');
      holder!.send({ type: 'write' });
      const done = await holder!.next('done');
      const owner = `holder-${holder!.child.pid}`;
      expect(done.accepted).toBe(true); // unfenced: nothing refused it
      expect(done.signalAborted).toBe(true); // its lease had ended by its own clock
      const granted = await second;
      const takenAfterMs = Number(process.hrtime.bigint() - stoppedAt) / 1e6;
      expect(granted.fencingToken).toBeGreaterThan(pausedToken as number);
      expect(await redis.get(resource)).toBe(`from ${owner}`); // its write landed, and nobody's since
      await redis.set(resource, 'from second');
      await recorder.release('second', name, granted);

      const strict = checkLockHistory(recorder.merged(done.events as HistoryEvent[]), { strict: true });
      // By what they did (strict: the holder from its acquire to its release, the write in between),
      // never two holders: the resumed holder wrote and released before the other was let in.
      expect(strict.checks.exclusion, JSON.stringify(strict.checks.exclusion)).toMatchObject({ valid: true });
      expect(strict.checks.tokens.valid).toBe(true);
      expect(await redis.get(resource)).toBe('from second');
      reportRow({
        row: 'holder-paused-lock-delay',
        backend: 'redis',
        fault: `a holder process SIGSTOPped for 1.5 s, three times its 500 ms lease, with lockDelayMs ${LOCK_DELAY_MS}; another client asks at once; the holder resumes (SIGCONT) and writes unfenced`,
        expected: ['OK'],
        observed: `the store kept the lease ${LOCK_DELAY_MS} ms longer: the resumed holder wrote and released before the other client was let in (${Math.round(takenAfterMs)} ms after the stop) — no two holders by what they did; the price, a lock held by nobody alive for up to the delay after an unclean end`,
        file: 'test/faults/paused-holder.test.ts',
        checker: strict,
        figures: { takenAfterMs: Math.round(takenAfterMs) },
      });
    } finally {
      holder!.kill('SIGCONT');
      holder!.kill('SIGKILL');
      redis.disconnect();
    }
  }, 60_000);
});
