import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ZooKeeperServer } from '@lockstock/servers';
import { LockLostError } from '../../src/index.js';
import { ZooKeeperLockClient, type ZooKeeperLockClientOptions } from '../../src/zookeeper/index.js';
import { encodeName } from '../../src/zookeeper/paths.js';
import { ZOOKEEPER_TICK_MS } from '../contract/backends.js';
import { FaultProxy } from '../helpers/fault-proxy.js';
import type { Client } from 'node-zookeeper-client';
import { adminClient, closeSessionOf, queueOf } from '../helpers/zookeeper.js';

/**
 * Sessions expired on the server (Curator's KillSession tests, ported), each race run many rounds on
 * one real server of this file's own: the holds of the dead session are all lost, a waiter of it never
 * holds on the dead session's node, and a read made right after the expiry rides through the
 * reconnection instead of failing with the driver's CONNECTION_LOSS.
 */
const ROUNDS = 20;
let server: ZooKeeperServer;
let admin: Client;
const clients: ZooKeeperLockClient[] = [];
const proxies: FaultProxy[] = [];
const client = (options: Partial<ZooKeeperLockClientOptions> = {}) => {
  const made = new ZooKeeperLockClient({
    connectString: server.connectString,
    sessionTimeoutMs: 4_000,
    ...options,
  });
  made.on('connectionError', () => undefined); // the tests cause them on purpose
  clients.push(made);
  return made;
};
const proxied = async (options: Partial<ZooKeeperLockClientOptions> = {}) => {
  const proxy = await FaultProxy.start({ host: server.host, port: server.port });
  proxies.push(proxy);
  return { proxy, locks: client({ connectString: `127.0.0.1:${proxy.port}`, ...options }) };
};
let unique = 0;
const uniqueName = (label: string) => `zk-expiry-${label}-${process.pid}-${++unique}`;
const aborted = (signal: AbortSignal) =>
  signal.aborted ? Promise.resolve() : new Promise((resolve) => signal.addEventListener('abort', resolve));

beforeAll(async () => {
  server = await ZooKeeperServer.start({ tickTimeMs: ZOOKEEPER_TICK_MS });
  admin = await adminClient(server.connectString);
});
afterAll(async () => {
  await Promise.all(clients.map((c) => c.close()));
  await Promise.all(proxies.map((p) => p.stop()));
  admin.close();
  await server.stop();
});

/** The session (hex) that owns the ephemeral node at `path`, as the server has it; undefined if none. */
function ownerOf(path: string): Promise<string | undefined> {
  return new Promise((resolve, reject) =>
    admin.exists(path, (error, stat) =>
      error ? reject(error as Error) : resolve(stat ? stat.ephemeralOwner.toString('hex') : undefined),
    ),
  );
}

describe('a session expired on the server', () => {
  for (const dark of [false, true]) {
    for (const policy of ['suspended', 'lost'] as const) {
      const link = dark ? 'its link dark meanwhile' : 'its link up';
      it(
        `one client, a holder and a waiter (${policy}, ${link}): every hold of the session is lost, the waiter holds only in the new session`,
        { timeout: 600_000 },
        async () => {
          const { proxy, locks } = await proxied({ connectionLossPolicy: policy });
          for (let round = 0; round < ROUNDS; round++) {
            const at = `round ${round}`;
            const name = uniqueName(`holder-waiter-${round}`);
            const held = await locks.mutex(name).acquire({ owner: 'holder' });
            const waiting = locks.mutex(name).acquire({ owner: 'waiter', waitMs: 60_000 });
            const settled = waiting.then(
              (handle) => ({ handle }),
              (error: unknown) => ({ error }),
            );
            await expect.poll(() => queueOf(admin, 'locks', name)).toHaveLength(2);
            const session = locks.sessionId;
            if (dark) proxy.set('blackhole');
            await closeSessionOf(server.connectString, locks.zookeeper);
            if (dark) {
              proxy.set('pass');
              proxy.reset();
            }
            // The session is gone on the server: the client learns it and opens the next one.
            await expect.poll(() => locks.sessionId, { timeout: 30_000, message: at }).not.toBe(session);
            await aborted(held.signal);
            // Lost with its session: told as the session's loss, or — when the client's own clock ran
            // out first, on a loaded machine — as its lease expired; either way not held.
            expect(['session_lost', 'expired'], at).toContain(held.lostError?.reason);
            const outcome = await settled;
            if ('handle' in outcome) {
              const { handle } = outcome;
              if (handle.signal.aborted) {
                // Granted in the old session before it ended: lost with it, and told so.
                expect(handle.lostError, at).toMatchObject({ reason: 'session_lost' });
                expect(await handle.release(), at).toBe('expired');
              } else {
                // A live hold: its node is one of the new session's, and it is there to release.
                const [node] = await queueOf(admin, 'locks', name);
                expect(await ownerOf(`/lockstock/locks/${encodeName(name)}/${node}`), at).toBe(
                  locks.sessionId,
                );
                expect(await handle.release(), at).toBe('released');
              }
            } else {
              expect(outcome.error, at).toBeInstanceOf(LockLostError);
            }
            expect(await held.release(), at).toBe('expired');
          }
        },
      );
    }
  }
});

describe("leader() right after the leader's session expired", () => {
  it(
    "the old leader's client answers through the reconnection, not with the driver's CONNECTION_LOSS",
    { timeout: 600_000 },
    async () => {
      const locks = client();
      for (let round = 0; round < ROUNDS; round++) {
        const election = locks.election(uniqueName(`leader-${round}`));
        const term = await election.campaign(`leader-${round}`);
        expect(await election.leader(), `round ${round}`).toMatchObject({ value: `leader-${round}` });
        await closeSessionOf(server.connectString, locks.zookeeper);
        // Read at once: the client is reconnecting (its socket closed by the server, then EXPIRED).
        const read = await election.leader().then(
          (leader) => ({ leader }),
          (error: unknown) => ({ error }),
        );
        expect(read, `round ${round}`).not.toHaveProperty('error');
        // The term ended with its session: nobody leads (its node went with the session).
        await aborted(term.signal);
        expect(await election.leader(), `round ${round}`).toBeUndefined();
      }
    },
  );
});
