import * as zookeeper from 'node-zookeeper-client';
import type { Client } from 'node-zookeeper-client';
import { encodeName } from '../../src/zookeeper/paths.js';

/** A driver client of the test's own (an operator's view of the ensemble), once connected. */
export async function adminClient(connectString: string, sessionTimeout = 10_000): Promise<Client> {
  const zk = zookeeper.createClient(connectString, { sessionTimeout, retries: 0 });
  const connected = new Promise<void>((resolve) => zk.once('connected', resolve));
  zk.connect();
  await connected;
  return zk;
}

/**
 * The queue of one lock (its nodes' names in sequence order), as ZooKeeper has it; `below`: a path
 * under the lock's node (a semaphore's `/leases`).
 */
export function queueOf(zk: Client, family: string, name: string, below = ''): Promise<string[]> {
  return new Promise((resolve, reject) =>
    zk.getChildren(`/lockstock/${family}/${encodeName(name)}${below}`, (error, children) => {
      if (error && (error as zookeeper.Exception).getCode?.() === zookeeper.Exception.NO_NODE) resolve([]);
      else if (error) reject(error as Error);
      else resolve([...children].sort((a, b) => a.slice(-10).localeCompare(b.slice(-10))));
    }),
  );
}

/**
 * Ends another client's session on the server, as an operator or a long partition would (Curator's
 * old KillSession): connects with the victim's session id and password — the server moves the
 * session to this connection, dropping the victim's — then closes it. The victim learns it when it
 * reconnects: EXPIRED. Returns once the server has said the session is gone (see closeSession).
 */
export async function closeSessionOf(connectString: string, victim: Client): Promise<void> {
  await closeSession(connectString, {
    sessionId: victim.getSessionId(),
    password: victim.getSessionPassword(),
    timeoutMs: victim.getSessionTimeout(),
  });
}

/**
 * closeSessionOf for a session of another process, by its id and password (as its client reads them).
 * A victim whose link is up reconnects at once and may take the session back before the close is
 * sent: the server then drops this connection instead, the close never reaches it and the session
 * lives on (a loaded machine, 3 of 8 rounds). So this closes, then connects once more with the same
 * id: only the server's EXPIRED answer ends the loop. Keep the victim's link down (a FaultProxy
 * blackhole) when the test needs the victim not to run in the session meanwhile.
 */
export async function closeSession(
  connectString: string,
  session: { sessionId: Buffer; password: Buffer; timeoutMs: number },
): Promise<void> {
  for (let attempt = 1; attempt <= 50; attempt++) {
    const killer = zookeeper.createClient(connectString, {
      sessionTimeout: session.timeoutMs,
      retries: 0,
      sessionId: session.sessionId,
      sessionPassword: session.password,
    } as Partial<zookeeper.Option>);
    const answer = new Promise<'connected' | 'expired'>((resolve) => {
      killer.once('connected', () => resolve('connected'));
      killer.once('expired', () => resolve('expired'));
    });
    killer.connect();
    if ((await answer) === 'expired') {
      try {
        killer.close();
      } catch {
        // An expired client is closed already.
      }
      return;
    }
    const closed = new Promise<void>((resolve) => killer.once('disconnected', resolve));
    killer.close();
    await closed;
  }
  throw new Error('the session kept being taken back: not closed after 50 attempts');
}

/**
 * Counts the driver calls a client makes (each lock attempt lists its queue once: getChildren). The
 * session's heartbeat (an `exists('/')` every third of the session timeout) is not counted: it runs
 * on its own clock and would land in a counted window on a slow machine.
 */
export function countCalls(zk: Client): Record<string, number> {
  const counts: Record<string, number> = {};
  for (const method of ['create', 'remove', 'getChildren', 'getData', 'exists', 'setData'] as const) {
    const original = zk[method] as (...args: unknown[]) => void;
    counts[method] = 0;
    (zk as unknown as Record<string, unknown>)[method] = function (this: Client, ...args: unknown[]) {
      if (!(method === 'exists' && args[0] === '/')) counts[method]!++;
      return original.apply(this, args);
    };
  }
  return counts;
}

/** The ensemble member a session is connected to (its `cons` lists the session), if any answers. */
export async function memberOf<N extends { running: boolean; fourLetterWord(word: string): Promise<string> }>(
  nodes: readonly N[],
  sessionId: string | undefined,
): Promise<N | undefined> {
  if (sessionId === undefined) return undefined;
  const wanted = BigInt(`0x${sessionId}`);
  for (const node of nodes) {
    if (!node.running) continue;
    const connections = await node.fourLetterWord('cons').catch(() => '');
    for (const [, sid] of connections.matchAll(/sid=0x([0-9a-f]+)/g)) {
      if (BigInt(`0x${sid}`) === wanted) return node;
    }
  }
  return undefined;
}
