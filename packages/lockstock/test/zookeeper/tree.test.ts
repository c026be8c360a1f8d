import type { Client } from 'node-zookeeper-client';
import * as zookeeper from 'node-zookeeper-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ZooKeeperServer } from '@lockstock/servers';
import { ZooKeeperLockClient } from '../../src/zookeeper/index.js';
import { ZOOKEEPER_TICK_MS } from '../contract/backends.js';
import { adminClient } from '../helpers/zookeeper.js';

/**
 * What the ZooKeeper backend leaves in the tree: no node per lock name once its locks are released
 * (queue parents are containers, which the server reaps — here every 100 ms instead of every minute),
 * and a chroot in the connect string that does not exist yet is made.
 */
let server: ZooKeeperServer;
let admin: Client;
const clients: ZooKeeperLockClient[] = [];
const client = (connectString = server.connectString) => {
  const made = new ZooKeeperLockClient({ connectString, sessionTimeoutMs: 4_000 });
  clients.push(made);
  return made;
};
let unique = 0;
const lockName = (label: string) => `tree-${label}-${process.pid}-${++unique}`;

/** The children of `path` as the server has them; none when it does not exist. */
function childrenOf(path: string): Promise<string[]> {
  return new Promise((resolve, reject) =>
    admin.getChildren(path, (error, children) => {
      if (error && (error as zookeeper.Exception).getCode?.() === zookeeper.Exception.NO_NODE) resolve([]);
      else if (error) reject(error as Error);
      else resolve([...children].sort());
    }),
  );
}

beforeAll(async () => {
  server = await ZooKeeperServer.start({
    tickTimeMs: ZOOKEEPER_TICK_MS,
    systemProperties: { 'znode.container.checkIntervalMs': 100 },
  });
  admin = await adminClient(server.connectString);
});
afterAll(async () => {
  await Promise.all(clients.map((c) => c.close()));
  admin.close();
  await server.stop();
});

describe('the ZooKeeper tree', () => {
  it('returns to empty after 20 names are locked and released', { timeout: 120_000 }, async () => {
    const locks = client();
    const names = Array.from({ length: 20 }, (_, i) => lockName(`name${i}`));
    for (const [i, name] of names.entries()) {
      const kind = i % 4;
      if (kind === 0) await (await locks.mutex(name).acquire()).release();
      else if (kind === 1) await (await locks.readWrite(name).read.acquire()).release();
      else if (kind === 2) await (await locks.election(name).campaign('me')).resign();
      else await (await locks.semaphore(name, { permits: 2 }).acquire()).release();
    }
    // Every queue parent once held a node: the server reaps them all (checked every 100 ms).
    await expect.poll(() => childrenOf('/lockstock/locks'), { timeout: 30_000 }).toEqual([]);
    await expect.poll(() => childrenOf('/lockstock/rw'), { timeout: 30_000 }).toEqual([]);
    await expect.poll(() => childrenOf('/lockstock/elections'), { timeout: 30_000 }).toEqual([]);
    // A semaphore keeps its base node (it stores the permit count); its gate and leases queues go.
    for (const name of names.filter((_, i) => i % 4 === 3)) {
      await expect
        .poll(() => childrenOf(`/lockstock/semaphores/${encodeURIComponent(name)}`), { timeout: 30_000 })
        .toEqual([]);
    }
  });

  it('a queue reaped under a lock is made again: every acquire succeeds', { timeout: 120_000 }, async () => {
    const [a, b] = [client(), client()];
    const name = lockName('busy');
    const queue = `/lockstock/locks/${encodeURIComponent(name)}`;
    const exists = () =>
      childrenOf('/lockstock/locks').then((names) => names.includes(encodeURIComponent(name)));
    // Reaped between two acquires of the same client (which knew the queue: see QuietQueues).
    for (let round = 0; round < 5; round++) {
      await (await a.mutex(name).acquire({ waitMs: 10_000 })).release();
      await expect.poll(exists, { timeout: 30_000 }).toBe(false);
    }
    // Two clients take turns while the server reaps every 100 ms: a create whose parent just went
    // makes it again (never NO_NODE to the caller).
    for (let round = 0; round < 100; round++) {
      await (await (round % 2 ? a : b).mutex(name).acquire({ waitMs: 10_000 })).release();
    }
    await expect.poll(() => childrenOf(queue), { timeout: 30_000 }).toEqual([]);
  });

  it('makes the chroot of its connect string when it is missing', async () => {
    const chroot = `/app-${process.pid}/tenant`;
    const locks = client(`${server.connectString}${chroot}`);
    const name = lockName('chroot');
    const handle = await locks.mutex(name).acquire({ waitMs: 10_000 });
    // The node lives under the chroot, as the server has it.
    expect(await childrenOf(`${chroot}/lockstock/locks/${encodeURIComponent(name)}`)).toHaveLength(1);
    expect(await locks.mutex(name).isLocked()).toBe(true);
    await handle.release();
    // A second client of the same chroot finds it made.
    const again = await client(`${server.connectString}${chroot}`).mutex(name).acquire({ waitMs: 10_000 });
    await again.release();
  });
});
