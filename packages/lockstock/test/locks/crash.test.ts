import { describe, expect, it } from 'vitest';
import { forkFixtures } from '../helpers/processes.js';
import { useRedis } from '../helpers/redis.js';

const env = useRedis();
const LEASE = 1_000;

describe('a SIGKILLed holder', () => {
  it.each(['lease', 'watchdog'] as const)('frees its lock within its lease (%s)', async (mode) => {
    const name = `crash-${mode}`;
    const [holder] = forkFixtures('holder.mjs', [[env.server.url, name, mode, String(LEASE)]]);
    const acquired = await holder!.next('acquired');
    const lock = env.locks().mutex(name);
    expect(await env.redis.get(`ls:{${name}}`)).toBe(acquired.owner);
    expect(await lock.remainingTtl()).toBeLessThanOrEqual(LEASE);

    holder!.kill('SIGKILL');
    const [, signal] = await holder!.exited;
    expect(signal).toBe('SIGKILL');
    const killedAt = performance.now();
    // Nobody releases it; only the lease running out can let us in. Waiting via the holder's TTL.
    const handle = await lock.acquire({ waitMs: LEASE + 5_000 });
    const waited = performance.now() - killedAt;
    expect(handle.fencingToken).toBeGreaterThan(acquired.token as number);
    expect(waited).toBeLessThanOrEqual(LEASE + 1_000);
    await handle.release();
  });
});
