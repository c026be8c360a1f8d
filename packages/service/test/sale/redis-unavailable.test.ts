import { Redis, type RedisOptions } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RedisSentinelGroup, RedisServer } from '@lockstock/servers';
import { isRedisUnavailable, unavailableDependency } from '../../src/sale/unavailable.js';

/**
 * Redis's "unavailable" errors as a single server and a Sentinel group really produce them, judged by
 * what they are (class, reply, wrapped cause), not by how their message starts (issue 35, defect 1).
 * The Cluster's shapes ("Too many Cluster redirections. Last error: …") are produced by a real
 * failover in test/http/cluster-failover.test.ts.
 */
let server: RedisServer;
let sentinel: RedisSentinelGroup;
const clients: Redis[] = [];

function client(url: string, options: RedisOptions = {}): Redis {
  const made = new Redis(url, { maxRetriesPerRequest: 1, ...options });
  made.on('error', () => {}); // connection errors are expected here; commands report them
  clients.push(made);
  return made;
}

const failure = (promise: Promise<unknown>) =>
  promise.then(
    () => {
      throw new Error('expected the command to fail');
    },
    (error: unknown) => error as Error,
  );

beforeAll(async () => {
  [server, sentinel] = await Promise.all([RedisServer.start(), RedisSentinelGroup.start({ replicas: 1 })]);
});
afterAll(async () => {
  server.signal('SIGCONT');
  clients.forEach((c) => c.disconnect());
  await Promise.all([server?.stop(), sentinel?.stop()]);
});

describe('a single server', () => {
  it("keeps a command's own errors as they are: a script error, a wrong type, an unknown command", async () => {
    const redis = client(server.url);
    await redis.set('a-string', 'x');
    const errors = await Promise.all([
      failure(redis.eval("return redis.call('INCR', KEYS[1])", 1, 'a-string')),
      failure(redis.lpush('a-string', 'y')),
      failure(redis.call('NO-SUCH-COMMAND')),
      failure(redis.eval('return {err="ERR the sale script refused"}', 0)),
    ]);
    for (const error of errors) {
      expect(error.name).toBe('ReplyError');
      expect(isRedisUnavailable(error), error.message).toBe(false);
      expect(unavailableDependency(error), error.message).toBeUndefined();
    }
    // A wrapper around a command's own error is not unavailability either.
    expect(isRedisUnavailable(new Error('the purchase failed', { cause: errors[0] }))).toBe(false);
  });

  it('a paused server (Command timed out), and a killed one (retries spent; not writeable)', async () => {
    const timing = client(server.url, { commandTimeout: 300 });
    const queued = client(server.url);
    const unqueued = client(server.url, { enableOfflineQueue: false });
    await Promise.all([timing.ping(), queued.ping()]);
    await expect.poll(() => unqueued.status).toBe('ready'); // it cannot queue a command before

    server.signal('SIGSTOP');
    const timedOut = await failure(timing.get('k'));
    server.signal('SIGCONT');
    expect(timedOut.message).toBe('Command timed out');

    await server.kill();
    const retriesSpent = await failure(queued.get('k'));
    await expect.poll(() => unqueued.status).not.toBe('ready');
    const notWriteable = await failure(unqueued.get('k'));
    await server.restart();

    expect(retriesSpent.name).toBe('MaxRetriesPerRequestError');
    expect(notWriteable.message).toMatch(/Stream isn't writeable|Connection is closed/);
    for (const error of [timedOut, retriesSpent, notWriteable]) {
      expect(unavailableDependency(error), error.message).toBe('redis');
      // Wrapped by a layer that kept it as its cause (a lockstock error, say): still Redis.
      expect(unavailableDependency(new Error('could not reserve', { cause: error })), error.message).toBe(
        'redis',
      );
    }
  });
});

describe('a Sentinel group', () => {
  it('a write that reaches a replica (READONLY), and a master that died before the failover', async () => {
    const replica = client(sentinel.replicas[0]!.url);
    const readOnly = await failure(replica.set('k', 'v'));
    expect(readOnly.name).toBe('ReplyError');
    expect(readOnly.message).toMatch(/^READONLY/);
    expect(unavailableDependency(readOnly)).toBe('redis');

    const viaSentinel = new Redis({
      sentinels: sentinel.sentinels,
      name: sentinel.masterName,
      maxRetriesPerRequest: 1,
      commandTimeout: 1_000,
    });
    viaSentinel.on('error', () => {});
    clients.push(viaSentinel);
    await viaSentinel.set('k', 'v');
    const errors: Error[] = [];
    const previous = sentinel.master.port;
    await sentinel.master.kill();
    // Until the Sentinel promotes the replica, every command fails: each must read as Redis down.
    const failedOver = sentinel.failedOver(previous);
    let done = false;
    void failedOver.finally(() => (done = true));
    while (!done || errors.length === 0) {
      await viaSentinel.set('k', 'v').catch((error: Error) => errors.push(error));
    }
    await failedOver;
    expect(errors.length).toBeGreaterThan(0);
    for (const error of errors)
      expect(unavailableDependency(error), `${error.name}: ${error.message}`).toBe('redis');
    await expect
      .poll(
        () =>
          viaSentinel.set('k', 'after').then(
            () => 'ok',
            () => 'failed',
          ),
        { timeout: 30_000 },
      )
      .toBe('ok');
  });
});
