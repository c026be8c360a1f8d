import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort, ZooKeeperServer } from '@lockstock/servers';
import { LockBackendError, LockConnectionError, LockTimeoutError } from '../../src/index.js';
import { ZooKeeperLockClient, type ZooKeeperLockClientOptions } from '../../src/zookeeper/index.js';
import { ZOOKEEPER_TICK_MS } from '../contract/backends.js';

/**
 * Issue 36: a ZooKeeper the client cannot reach — nothing listening, a host name that does not
 * resolve, a server killed under it — fails lock calls with a LockConnectionError naming the connect
 * string and the cause once `connectTimeoutMs` has passed without a connection (before, an acquire
 * waited silently for ever, and a `waitMs` read as contention). A wait that times out first says the
 * client was disconnected. A client whose server comes (back) within the connect timeout works.
 */
let server: ZooKeeperServer;
const clients: ZooKeeperLockClient[] = [];
const client = (options: Partial<ZooKeeperLockClientOptions> & { connectString: string }) => {
  const made = new ZooKeeperLockClient({ sessionTimeoutMs: 4_000, connectTimeoutMs: 2_000, ...options });
  made.on('connectionError', () => undefined); // caused on purpose
  clients.push(made);
  return made;
};
let unique = 0;
const lockName = (label: string) => `zk-connection-${label}-${process.pid}-${++unique}`;

beforeAll(async () => {
  server = await ZooKeeperServer.start({ tickTimeMs: ZOOKEEPER_TICK_MS });
});
afterAll(async () => {
  await Promise.all(clients.map((c) => c.close()));
  await server.stop();
});

/** The call's rejection, or 'still pending' if it has not settled within `withinMs` (old code: never). */
async function failure(promise: Promise<unknown>, withinMs = 30_000): Promise<unknown> {
  let timer: NodeJS.Timeout | undefined;
  const pending = new Promise((resolve) => (timer = setTimeout(() => resolve('still pending'), withinMs)));
  try {
    return await Promise.race([
      promise.then(
        () => 'acquired',
        (error: unknown) => error,
      ),
      pending,
    ]);
  } finally {
    clearTimeout(timer);
  }
}

describe('a ZooKeeper that cannot be reached', () => {
  it('never connected (nothing listening): acquire() fails with the connect string and ECONNREFUSED', async () => {
    const connectString = `127.0.0.1:${await freePort()}`;
    const locks = client({ connectString });
    const startedAt = performance.now();
    const error = await failure(locks.mutex(lockName('refused')).acquire());
    expect(error).toBeInstanceOf(LockConnectionError);
    expect(error).toBeInstanceOf(LockBackendError);
    expect(error).toMatchObject({
      code: 'ERR_LOCK_BACKEND',
      backend: 'zookeeper',
      address: connectString,
      errorCode: 'ECONNREFUSED',
    });
    expect((error as Error).message).toContain(`cannot reach ZooKeeper at ${connectString} (ECONNREFUSED`);
    expect(performance.now() - startedAt).toBeGreaterThanOrEqual(1_900); // the connect timeout, not at once
    // Every later call says the same at once, without queueing anything in the driver.
    const again = await failure(
      locks.semaphore(lockName('refused-semaphore'), { permits: 2 }).tryAcquire(),
      5_000,
    );
    expect(again).toMatchObject({ name: 'LockConnectionError', errorCode: 'ECONNREFUSED' });
  });

  it('a host name that does not resolve: ENOTFOUND', async () => {
    const connectString = 'no-such-host.invalid:2181';
    const error = await failure(client({ connectString }).mutex(lockName('mistyped')).tryAcquire());
    expect(error).toMatchObject({
      name: 'LockConnectionError',
      address: connectString,
      errorCode: 'ENOTFOUND',
    });
    expect((error as Error).message).toMatch(/ENOTFOUND: the host name does not resolve/);
  });

  it('waitMs ending while never connected: a LockTimeoutError that says the client was disconnected', async () => {
    const connectString = `127.0.0.1:${await freePort()}`;
    const locks = client({ connectString, connectTimeoutMs: 60_000 });
    const error = await failure(locks.mutex(lockName('timeout')).acquire({ waitMs: 1_500 }));
    expect(error).toBeInstanceOf(LockTimeoutError);
    expect(error).toMatchObject({ code: 'ERR_LOCK_TIMEOUT', disconnected: true });
    expect((error as Error).message).toContain(
      `disconnected from ZooKeeper at ${connectString} (ECONNREFUSED`,
    );
    expect((error as Error).cause).toBeInstanceOf(LockConnectionError);
    expect((error as Error).cause).toMatchObject({ address: connectString, errorCode: 'ECONNREFUSED' });
  });

  it('a timeout while connected is contention, as before', async () => {
    const holder = client({ connectString: server.connectString });
    const other = client({ connectString: server.connectString });
    const name = lockName('contended');
    const held = await holder.mutex(name).acquire();
    const error = await failure(other.mutex(name).acquire({ waitMs: 300 }));
    expect(error).toMatchObject({ name: 'LockTimeoutError', disconnected: false });
    expect((error as Error).message).not.toMatch(/disconnected/);
    await held.release();
  });

  it('a server killed under its clients: a waiter and a new acquire fail with ECONNREFUSED; back, locks work', async () => {
    const holder = client({ connectString: server.connectString, connectTimeoutMs: 3_000 });
    const waiter = client({ connectString: server.connectString, connectTimeoutMs: 3_000 });
    const name = lockName('killed');
    await holder.mutex(name).acquire();
    const waiting = failure(waiter.mutex(name).acquire(), 60_000);
    await expect.poll(async () => (await holder.mutex(name).inspect()).holders).toBe(1);
    await server.kill();
    const [waited, fresh] = await Promise.all([
      waiting,
      failure(waiter.mutex(lockName('killed-fresh')).acquire(), 60_000),
    ]);
    for (const error of [waited, fresh]) {
      expect(error).toBeInstanceOf(LockConnectionError);
      expect(error).toMatchObject({ address: server.connectString, errorCode: 'ECONNREFUSED' });
      expect((error as Error).message).toMatch(/disconnected for \d+ ms/);
    }
    await server.restart();
    // Calls fail at once until the driver has reconnected (it tries every 100 ms), then work as usual.
    const name2 = lockName('killed-after');
    await expect
      .poll(
        async () => {
          const handle = await waiter
            .mutex(name2)
            .tryAcquire()
            .catch(() => undefined);
          await handle?.release();
          return handle ? 'acquired' : 'not yet';
        },
        { timeout: 60_000, interval: 50 },
      )
      .toBe('acquired');
  });

  it('a client made before its server started connects and locks as usual', async () => {
    await server.kill();
    const locks = client({ connectString: server.connectString, connectTimeoutMs: 120_000 });
    const acquiring = locks.mutex(lockName('late-server')).acquire();
    await server.restart();
    const handle = await acquiring;
    expect(handle.fencingToken).toBeGreaterThan(0);
    await handle.release();
  });
});
