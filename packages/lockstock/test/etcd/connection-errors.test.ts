import { afterAll, describe, expect, it } from 'vitest';
import { EtcdServer, freePort } from '@lockstock/servers';
import { LockBackendError, LockConnectionError } from '../../src/index.js';
import { EtcdLockClient } from '../../src/etcd/index.js';

/**
 * Issue 36, etcd: an etcd the client cannot reach does not make acquire() wait silently (the etcd
 * calls have a deadline and gRPC fails fast) — this checks it stays so — and the error names the
 * endpoint and the cause: a LockConnectionError instead of gRPC's "14 UNAVAILABLE: …" or etcd3's
 * "Execution prevented because the circuit breaker is open", which named nothing.
 */
const clients: EtcdLockClient[] = [];
const servers: EtcdServer[] = [];
const client = (hosts: string) => {
  const made = new EtcdLockClient({ hosts, sessionTtlSeconds: 5 });
  made.on('connectionError', () => undefined); // caused on purpose
  clients.push(made);
  return made;
};
afterAll(async () => {
  await Promise.all(clients.map((c) => c.close()));
  await Promise.all(servers.map((s) => s.stop()));
});
let unique = 0;
const lockName = (label: string) => `etcd-connection-${label}-${process.pid}-${++unique}`;

/** The call's rejection, or 'still pending' if it has not settled within `withinMs`. */
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

describe('an etcd that cannot be reached', () => {
  it('nothing listening: acquire() fails at once with the endpoint and ECONNREFUSED, again and again', async () => {
    const port = await freePort();
    const locks = client(`http://127.0.0.1:${port}`);
    for (const label of ['first', 'second', 'third']) {
      // waitMs far longer than the deadline: no silent wait that ends as a timeout
      const error = await failure(locks.mutex(lockName(label)).acquire({ waitMs: 60_000 }));
      expect(error).toBeInstanceOf(LockConnectionError);
      expect(error).toBeInstanceOf(LockBackendError);
      expect(error).toMatchObject({
        backend: 'etcd',
        address: `127.0.0.1:${port}`,
        errorCode: 'ECONNREFUSED',
      });
      expect((error as Error).message).toContain(`cannot reach etcd at 127.0.0.1:${port} (ECONNREFUSED`);
    }
  });

  it('a host name that does not resolve: ENOTFOUND', async () => {
    const error = await failure(
      client('http://no-such-host.invalid:2379').mutex(lockName('mistyped')).tryAcquire(),
    );
    expect(error).toMatchObject({
      name: 'LockConnectionError',
      address: 'no-such-host.invalid:2379',
      errorCode: 'ENOTFOUND',
    });
  });

  it('a server killed under a waiter: the waiter and a new acquire name it; back, locks work', async () => {
    const server = await EtcdServer.start();
    servers.push(server);
    const holder = client(server.endpoint);
    const waiter = client(server.endpoint);
    const name = lockName('killed');
    await holder.mutex(name).acquire();
    const waiting = failure(waiter.mutex(name).acquire(), 60_000);
    await expect.poll(async () => (await holder.mutex(name).inspect()).holders).toBe(1);
    await server.kill();
    const [waited, fresh] = await Promise.all([waiting, failure(waiter.mutex(lockName('fresh')).acquire())]);
    for (const error of [waited, fresh]) {
      expect(error).toBeInstanceOf(LockConnectionError);
      expect(error).toMatchObject({ address: `127.0.0.1:${server.port}` });
    }
    await server.restart();
    const after = lockName('after');
    await expect
      .poll(
        async () => {
          const handle = await waiter
            .mutex(after)
            .tryAcquire()
            .catch(() => undefined);
          await handle?.release();
          return handle ? 'acquired' : 'not yet';
        },
        { timeout: 60_000, interval: 100 },
      )
      .toBe('acquired');
  });
});
