import { fork } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { Contender, fixturePath } from '../helpers/processes.js';
import { useRedis } from '../helpers/redis.js';

const env = useRedis();
const WATCHDOG_MS = 1_500;

describe('abandoned holds', () => {
  it('a handle collected while held stops renewing and is reported abandoned, with label and stack', async () => {
    const name = 'abandoned-report';
    const backend = { kind: 'redis', url: env.server.url, watchdogTimeoutMs: WATCHDOG_MS };
    const args = JSON.stringify({ backend, name, gcRounds: 200 });
    const holder = new Contender(
      fork(fixturePath('abandoned-holder.mjs'), [args], {
        execArgv: ['--expose-gc'],
        env: { ...process.env, LOCKSTOCK_ACQUIRE_STACKS: '1' },
        stdio: ['ignore', 'ignore', 'inherit', 'ipc'],
      }),
    );
    try {
      const acquired = await holder.next('acquired');
      expect(await env.redis.get(`ls:{${name}}`)).toBe(acquired.owner);
      expect(await holder.next('gc-done')).toMatchObject({ collected: true });
      const lost = await holder.next('lost');
      // The only loss: the released handle's collection reports nothing.
      expect(lost).toMatchObject({
        name,
        reason: 'abandoned',
        label: 'nightly-report',
        fencingToken: acquired.token,
      });
      // Where it was acquired: the fixture's function that leaked it.
      expect(lost.acquiredAt).toMatch(/leakNightlyReport/);

      // From Redis: nothing renews the key any more — its TTL only falls (a renewal would set it back
      // to the watchdog's lease) until the store expires it on its own clock.
      let previous = Infinity;
      for (;;) {
        const pttl = await env.redis.pttl(`ls:{${name}}`);
        if (pttl === -2) break; // gone
        expect(pttl).toBeGreaterThan(0);
        expect(pttl).toBeLessThanOrEqual(previous);
        previous = pttl;
        await new Promise((resolve) => setTimeout(resolve, 50)); // observation pace, not synchronisation
      }
      // The client still renews what it does hold (the watchdog itself is alive), and nothing else was lost.
      expect(await env.redis.pttl(`ls:{${name}-clock}`)).toBeGreaterThan(0);
    } finally {
      holder.kill();
      await holder.exited;
    }
  }, 60_000);
});
