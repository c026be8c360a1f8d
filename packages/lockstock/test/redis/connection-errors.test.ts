import { Redis } from 'ioredis';
import { afterAll, describe, expect, it } from 'vitest';
import { freePort, RedisServer } from '@lockstock/servers';
import {
  InvalidLockOptionError,
  LockBackendError,
  LockConnectionError,
  RedisLockClient,
  RedlockClient,
} from '../../src/index.js';

/**
 * Issue 36: a Redis that is not there — nothing listening, a host name that does not resolve, a
 * server killed under the client — fails lock calls with a LockConnectionError naming the address and
 * the cause, not ioredis' "Reached the max retries per request limit (which is 2)"; a URL of another
 * scheme is refused when the client is made.
 */
const clients: RedisLockClient[] = [];
const servers: RedisServer[] = [];
const owned: Redis[] = [];
const client = (redis: string | Redis) => {
  const made = new RedisLockClient({ redis });
  made.on('connectionError', () => undefined); // caused on purpose
  clients.push(made);
  return made;
};
afterAll(async () => {
  await Promise.all(clients.map((c) => c.close()));
  for (const redis of owned) redis.disconnect();
  await Promise.all(servers.map((s) => s.stop()));
});

const failure = (promise: Promise<unknown>) =>
  promise.then(
    () => {
      throw new Error('expected the call to fail');
    },
    (error: unknown) => error,
  );

describe('a Redis that cannot be reached', () => {
  it('nothing listening: LockConnectionError with the address and ECONNREFUSED', async () => {
    const port = await freePort();
    const error = await failure(client(`redis://127.0.0.1:${port}`).mutex('refused').acquire());
    expect(error).toBeInstanceOf(LockConnectionError);
    expect(error).toBeInstanceOf(LockBackendError); // handled wherever backend failures are
    expect(error).toMatchObject({
      name: 'LockConnectionError',
      code: 'ERR_LOCK_BACKEND',
      lockName: 'refused',
      backend: 'redis',
      address: `127.0.0.1:${port}`,
      errorCode: 'ECONNREFUSED',
    });
    const { message } = error as Error;
    expect(message).toContain(`Redis at 127.0.0.1:${port}`);
    expect(message).toContain('ECONNREFUSED');
    expect(message).not.toMatch(/max retries/);
    // The cause is still ioredis' own error: code that tells "Redis is down" by it still does.
    expect((error as Error).cause).toMatchObject({ name: 'MaxRetriesPerRequestError' });
  });

  it('a host name that does not resolve: ENOTFOUND, the host named', async () => {
    const error = await failure(client('redis://no-such-host.invalid:6379').mutex('mistyped').tryAcquire());
    expect(error).toBeInstanceOf(LockConnectionError);
    expect(error).toMatchObject({ address: 'no-such-host.invalid:6379', errorCode: 'ENOTFOUND' });
    expect((error as Error).message).toMatch(
      /no-such-host\.invalid:6379 \(ENOTFOUND: the host name does not resolve/,
    );
  });

  it('a server killed under the client: ECONNREFUSED at its address; back again, locks work', async () => {
    const server = await RedisServer.start();
    servers.push(server);
    const locks = client(server.url);
    await (await locks.mutex('killed').acquire()).release();
    await server.kill();
    const error = await failure(locks.mutex('killed').acquire({ waitMs: 30_000 }));
    expect(error).toMatchObject({
      name: 'LockConnectionError',
      address: `127.0.0.1:${server.port}`,
      errorCode: 'ECONNREFUSED',
    });
    // inspect() reads with a plain command, not a script: explained the same way.
    expect(await failure(locks.mutex('killed').isLocked())).toBeInstanceOf(LockConnectionError);
    await server.restart();
    await expect
      .poll(
        () =>
          locks
            .mutex('killed')
            .isLocked()
            .catch(() => 'down'),
        { timeout: 30_000 },
      )
      .toBe(false);
    await (await locks.mutex('killed').acquire({ waitMs: 10_000 })).release();
  });

  it("a caller's client: the address is named, the caller's error handling is left alone", async () => {
    const port = await freePort();
    const redis = new Redis({ port, host: '127.0.0.1', maxRetriesPerRequest: 1, lazyConnect: true });
    owned.push(redis);
    const errors: Error[] = [];
    redis.on('error', (e) => errors.push(e));
    const error = await failure(client(redis).mutex('theirs').acquire());
    expect(error).toMatchObject({ name: 'LockConnectionError', address: `127.0.0.1:${port}` });
    expect(redis.listenerCount('error')).toBe(1);
  });
});

describe('a URL of another scheme', () => {
  it.each(['http://127.0.0.1:6379', 'HTTPS://user:secret@cache.example:443/0', 'mysql://db:3306'])(
    '%s is refused when the client is made, naming the schemes that work',
    (url) => {
      let error: unknown;
      try {
        client(url);
      } catch (thrown) {
        error = thrown;
      }
      expect(error).toBeInstanceOf(InvalidLockOptionError);
      const { message } = error as Error;
      expect(message).toContain('redis://');
      expect(message).toContain('rediss://');
      expect(message).toContain(`${/^[a-z]+/i.exec(url)?.[0].toLowerCase()}://`);
      expect(message).not.toContain('secret'); // never the URL itself
    },
  );

  it('Redlock refuses one as well; redis://, rediss://, host:port and a bare port are accepted', async () => {
    expect(
      () =>
        new RedlockClient({ nodes: ['redis://127.0.0.1:1', 'http://127.0.0.1:2', 'redis://127.0.0.1:3'] }),
    ).toThrow(InvalidLockOptionError);
    for (const url of ['redis://127.0.0.1:1', 'rediss://127.0.0.1:1', '127.0.0.1:1', '1', '/tmp/none.sock']) {
      await client(url).close();
    }
  });
});
