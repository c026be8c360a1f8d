import { RedisServer } from '@lockstock/servers';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  LockBackendError,
  MultiLockReleaseError,
  RedisLockClient,
  type AcquireOptions,
  type Lock,
} from '../../src/index.js';
import { nextEvent } from '../helpers/redis.js';

// A multi-lock over parts on two Redis servers; one server is killed while parts are held. Parts are
// named so that the doomed part comes after a healthy one by name: releases used to run in reverse
// name order and stop at the first failure, leaving the healthy part held (and renewed).

let survivor: RedisServer;
const doomed: RedisServer[] = [];
const clients: RedisLockClient[] = [];

beforeAll(async () => {
  survivor = await RedisServer.start();
});
afterAll(async () => {
  await Promise.all(clients.map((client) => client.close()));
  await Promise.all([survivor, ...doomed].map((server) => server.stop()));
});

function locksOn(server: RedisServer): RedisLockClient {
  const client = new RedisLockClient({ redis: server.url });
  clients.push(client);
  return client;
}

async function doomedServer(): Promise<RedisServer> {
  const server = await RedisServer.start();
  doomed.push(server);
  return server;
}

/** `lock`, except that its server is killed just before it is asked for (after earlier parts). */
function killedWhenAsked(lock: Lock, server: RedisServer): Lock {
  return {
    name: lock.name,
    acquire: (options?: AcquireOptions) => lock.acquire(options),
    tryAcquire: async (options?: AcquireOptions) => {
      await server.kill();
      return lock.tryAcquire(options);
    },
    run: (fn, options) => lock.run(fn, options),
    adopt: (owner, options) => lock.adopt(owner, options),
    isLocked: () => lock.isLocked(),
    inspect: () => lock.inspect(),
  };
}

describe('multi-lock release when a part fails', () => {
  it('releases every other part and reports the failed one', async () => {
    const server = await doomedServer();
    const [healthy, failing] = [locksOn(survivor), locksOn(server)];
    const multi = healthy.multiLock([healthy.mutex('rel-a'), failing.mutex('rel-b')]);
    const handle = await multi.acquire({ waitMs: 10_000 });
    await server.kill();

    const error: unknown = await handle.release().then(
      () => undefined,
      (reason: unknown) => reason,
    );
    // The healthy part is free at once for anyone else.
    const other = await locksOn(survivor).mutex('rel-a').tryAcquire();
    expect(other).toBeDefined();
    await other?.release();

    expect(error).toBeInstanceOf(MultiLockReleaseError);
    const failure = error as MultiLockReleaseError;
    expect(failure.code).toBe('ERR_MULTI_LOCK_RELEASE');
    expect(failure.lockName).toBe('rel-a+rel-b');
    expect(failure.parts).toEqual(['rel-b']);
    expect(failure.errors).toHaveLength(1);
    expect(failure.errors[0]).toBeInstanceOf(LockBackendError);
    expect((failure.errors[0] as LockBackendError).lockName).toBe('rel-b');
    expect(failure.cause).toBe(failure.errors[0]);
    expect(failure.message).toContain('"rel-b"');
    // Calling it again answers the same outcome, as any handle's release does.
    await expect(handle.release()).rejects.toBe(error);
  });

  it('gives back every part already taken when a later part cannot be had', async () => {
    const server = await doomedServer();
    const [healthy, failing] = [locksOn(survivor), locksOn(server)];
    const reported = nextEvent(healthy, 'connectionError', (e) => e instanceof MultiLockReleaseError);
    // 'rb-a' (healthy) and 'rb-b' (on the doomed server) are taken; the server dies before 'rb-c'.
    const multi = healthy.multiLock([
      healthy.mutex('rb-a'),
      failing.mutex('rb-b'),
      killedWhenAsked(failing.mutex('rb-c'), server),
    ]);

    const error: unknown = await multi.acquire({ waitMs: 10_000 }).then(
      () => undefined,
      (reason: unknown) => reason,
    );
    const other = await locksOn(survivor).mutex('rb-a').tryAcquire();
    expect(other).toBeDefined();
    await other?.release();

    // The acquire answers why it failed (the part it could not get); the give-back's failure (the
    // part taken on the server now gone) goes to the client's connectionError event.
    expect(error).toBeInstanceOf(LockBackendError);
    expect((error as LockBackendError).lockName).toBe('rb-c');
    const failure = (await reported) as MultiLockReleaseError;
    expect(failure.parts).toEqual(['rb-b']);
    expect((failure.errors[0] as LockBackendError).lockName).toBe('rb-b');
  });
});
