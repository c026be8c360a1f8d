import { afterEach, describe, expect, it, vi } from 'vitest';
import { LockBackendError, RedisLockClient } from '../../src/index.js';
import { freePort } from '@lockstock/servers';

afterEach(() => {
  vi.restoreAllMocks();
});

describe('an unreachable Redis', () => {
  it('fails the call with a coded error naming the lock, fires connectionError, prints nothing', async () => {
    const printed = vi.spyOn(console, 'error');
    const port = await freePort(); // nothing listens there
    const locks = new RedisLockClient({ redis: `redis://127.0.0.1:${port}` });
    const reported = new Promise<Error>((resolve) => locks.once('connectionError', resolve));
    const error = await locks
      .mutex('nowhere')
      .acquire({ waitMs: 1_000 })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(LockBackendError);
    expect(error).toMatchObject({ code: 'ERR_LOCK_BACKEND', lockName: 'nowhere' });
    expect((await reported).message).toMatch(/ECONNREFUSED/);
    await locks.close();
    expect(printed.mock.calls.filter((args) => /Unhandled error event/.test(String(args[0])))).toEqual([]);
  });
});
