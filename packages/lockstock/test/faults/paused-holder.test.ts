import { Redis } from 'ioredis';
import { describe, expect, it } from 'vitest';
import { checkLockHistory, type HistoryEvent } from '../../src/checker/index.js';
import { RedisFencedStore } from '../../src/index.js';
import { forkFixtures } from '../helpers/processes.js';
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
      const events: HistoryEvent[] = [];
      const now = () => String(process.hrtime.bigint());
      // Another client asks at once; it gets the lock when the paused holder's lease ends.
      events.push({ proc: 'second', type: 'invoke', f: 'acquire', t: now(), lock: name });
      const second = await env.locks().mutex(name).acquire({ owner: 'second', waitMs: 10_000 });
      events.push({
        proc: 'second',
        type: 'ok',
        f: 'acquire',
        t: now(),
        lock: name,
        owner: 'second',
        token: second.fencingToken,
      });
      expect(second.fencingToken).toBeGreaterThan(pausedToken as number);
      const store = new RedisFencedStore(redis);
      expect(await store.write(`resource:${name}`, 'from second', second)).toBe(true);
      events.push({
        src: 'resource',
        proc: 'resource',
        type: 'ok',
        f: 'write',
        t: now(),
        res: name,
        token: second.fencingToken,
        owner: 'second',
      });

      // The paused holder resumes, still holding its handle, and writes under its old token.
      holder!.kill('SIGCONT');
      holder!.send({ type: 'write' });
      const done = await holder!.next('done');
      expect(done.accepted).toBe(false); // the store refused the stale token
      expect(done.signalAborted).toBe(true); // its signal said so: a careful holder would have stopped
      events.push({
        src: 'resource',
        proc: 'resource',
        type: 'fail',
        f: 'write',
        t: now(),
        res: name,
        token: pausedToken as number,
        owner: `holder-${holder!.child.pid}`,
        error: 'fence',
      });
      events.push({ proc: 'second', type: 'invoke', f: 'release', t: now(), lock: name });
      await second.release();
      events.push({ proc: 'second', type: 'ok', f: 'release', t: now(), lock: name });

      const history = [...(done.events as HistoryEvent[]), ...events].sort((a, b) =>
        BigInt(a.t as string) < BigInt(b.t as string) ? -1 : 1,
      );
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
      expect(await store.read(`resource:${name}`)).toBe('from second');
    } finally {
      holder!.kill('SIGCONT');
      holder!.kill('SIGKILL');
      redis.disconnect();
    }
  });
});
