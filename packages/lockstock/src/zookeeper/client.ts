import type { Client } from 'node-zookeeper-client';
import {
  LockClientBase,
  LockElection,
  proclaimedValue,
  validateLeaseMs,
  type BackendCapabilities,
  type BackendHost,
  type LockBackend,
  type LatchResource,
  type LockClientOptions,
  type LockResource,
} from '../backend/index.js';
import { InvalidLockOptionError } from '../locks/errors.js';
import type { Election, Leader } from '../locks/types.js';
import { holderOfData } from './holders.js';
import { ZooKeeperLatch } from './latch.js';
import { OwnNodes } from './nodes.js';
import { DEFAULT_ROOT, lockPath, sortQueue, tokenOf, validateRoot, type Family } from './paths.js';
import { ExclusiveQueue } from './queue.js';
import { readWriteQueues } from './read-write.js';
import { SemaphoreResource } from './semaphore.js';
import { codeOf, NO_NODE, ZooKeeperSession, type ConnectionLossPolicy } from './session.js';
import { checkZooKeeperServer } from './server-checks.js';
import type { ServerFinding } from '../locks/server-checks.js';

export interface ZooKeeperLockClientOptions extends LockClientOptions {
  /**
   * The ensemble, `host:port[,host:port...][/chroot]`: the lock client makes its own ZooKeeper client,
   * and a new one (a new session) after each expiry. Give this or `client`.
   */
  connectString?: string;
  /**
   * A node-zookeeper-client client you own (you connect() and close() it). After its session expires
   * it cannot be used again, so every call fails until you make a new lock client: prefer
   * `connectString`, with which the lock client opens a new session by itself.
   */
  client?: Client;
  /**
   * Session timeout to ask for, ms; the server bounds it to 2–20 × its tickTime. Holds end this long
   * after their holder stopped answering (crashed, paused, partitioned).
   * @default 30000
   */
  sessionTimeoutMs?: number;
  /**
   * How long the client may be without a connection to any server — since it was made, or since it
   * lost its connection — before lock calls fail with LockConnectionError naming the servers and why
   * (ECONNREFUSED, ENOTFOUND, a connect that timed out, a handshake never answered). An acquire
   * waiting meanwhile fails with it then; a `waitMs` that ends first rejects with LockTimeoutError,
   * `disconnected: true`, that error its `cause`. Once connected again, calls go through as before.
   * @default 10000
   */
  connectTimeoutMs?: number;
  /** Where every lock's znodes live. @default '/lockstock' */
  root?: string;
  /**
   * 'suspended' (Curator's standard policy): holds are lost as soon as the connection is;
   * 'lost': only when the session is (expired, or no answer for the session timeout).
   * @default 'suspended'
   */
  connectionLossPolicy?: ConnectionLossPolicy;
}

const ZOOKEEPER_CAPABILITIES: BackendCapabilities = Object.freeze({
  leases: 'session',
  fencing: 'native',
  wakeUps: 'watch',
  unsupported: Object.freeze({
    spin: 'every ZooKeeper waiter already watches only the node before it, at no cost to the others: a waiter that polls instead would add load and save nothing — use reentrant()',
    'counter-semaphore':
      'a ZooKeeper permit is an ephemeral node that ends with its holder’s session; a permit that outlives a crashed holder (Redisson’s RSemaphore) would need persistent nodes nobody cleans up — use semaphore()',
  }),
  // In the data of each holder's node, written with its create (holders.ts): no extra write.
  // Elections run on a mutex queue of their own: a leader's record is its node's.
  holderMetadata: Object.freeze(['mutex', 'reentrant', 'fair', 'read-write', 'semaphore'] as const),
});

/** What forceUnlock can do with each thing the backend made. */
interface ForceUnlockable {
  forceUnlock(): Promise<boolean>;
}

/**
 * The ZooKeeper backend (Apache Curator's recipes on node-zookeeper-client): every lock is a queue of
 * ephemeral sequential znodes; each waiter watches the node before it; holds last as long as the
 * session (no lease, nothing renewed) and are lost with it, or with the connection ('suspended').
 * Fencing tokens are the nodes' czxids. Offers every family but spin and the counter semaphore.
 */
export class ZooKeeperBackend implements LockBackend {
  readonly name = 'zookeeper';
  readonly capabilities = ZOOKEEPER_CAPABILITIES;
  readonly session: ZooKeeperSession;
  private readonly nodes: OwnNodes;
  private readonly root: string;
  private readonly made = new WeakMap<object, ForceUnlockable>();
  private readonly options: ResolvedOptions;

  constructor(
    options: ResolvedOptions,
    private readonly host: BackendHost,
  ) {
    this.root = options.root;
    this.options = options;
    this.session = new ZooKeeperSession(options, host);
    this.nodes = new OwnNodes(this.session, host);
  }

  mutex(name: string): LockResource {
    return this.exclusive('locks', name, false);
  }

  /** Curator's InterProcessMutex: re-entry by the same owner adds a hold and keeps its token. */
  reentrant(name: string): LockResource {
    return this.exclusive('locks', name, true);
  }

  /** The same queue: ZooKeeper grants it in arrival order across all clients already. */
  fair(name: string): LockResource {
    return this.exclusive('locks', name, true);
  }

  readWrite(name: string): { read: LockResource; write: LockResource } {
    const { read, write } = readWriteQueues(this.nodes, name, lockPath(this.root, 'rw', name));
    return { read: this.track(read), write: this.track(write) };
  }

  semaphore(name: string, permits: number): LockResource {
    const base = lockPath(this.root, 'semaphores', name);
    return this.track(new SemaphoreResource(this.nodes, name, base, permits));
  }

  latch(name: string): LatchResource {
    const path = lockPath(this.root, 'latches', name);
    return this.track(new ZooKeeperLatch(this.session, name, path));
  }

  /**
   * A term is a hold of a mutex in the elections' own queue: it ends with the session (its signal
   * aborts). A campaign still waiting when its session ends is rejected with LockLostError: its place
   * in the queue went with the session. The leader is the head of the queue, its value in its node.
   */
  election(name: string): Election {
    const parent = lockPath(this.root, 'elections', name);
    const queue = new ExclusiveQueue(this.nodes, name, parent, {
      reentrant: false,
      type: 'lock',
      abortWaitOnSessionLoss: true,
    });
    const readLeader = async (children?: string[]): Promise<Leader | undefined> => {
      for (let round = 0; round < 5; round++) {
        const head = sortQueue(children ?? (await this.nodes.children(parent)))[0];
        children = undefined;
        if (head === undefined) return undefined;
        try {
          const { data, stat } = await this.session.getData(`${parent}/${head.name}`);
          // The owner from the head's record, or its data whole (a candidate of an older client).
          const value = proclaimedValue(holderOfData(data).owner);
          return value === undefined ? undefined : { value, fencingToken: tokenOf(stat) };
        } catch (error) {
          if (codeOf(error) !== NO_NODE) throw error; // the head left meanwhile: read again
        }
      }
      return undefined;
    };
    // The leader is the queue's head: a watch on the queue's children fires when a candidate joins
    // or leaves (the head's data never changes), or on the queue's creation while it is missing.
    const watchLeader = async () => {
      for (;;) {
        const { watcher, watch } = this.session.newWatch();
        try {
          try {
            const children = await this.session.getChildren(parent, watcher);
            return { leader: await readLeader(children), changed: watch };
          } catch (error) {
            if (codeOf(error) !== NO_NODE) throw error;
          }
          // No queue (no candidate yet, or its container reaped): watch for its creation instead.
          if ((await this.session.exists(parent, watcher)) === undefined) {
            return { leader: undefined, changed: watch };
          }
        } catch (error) {
          watch.cancel();
          throw error;
        }
        watch.cancel(); // made meanwhile: read it
      }
    };
    return new LockElection(
      name,
      this.host.lock(this.track(queue), 'mutex'),
      () => this.session.retryRead(() => readLeader()),
      watchLeader,
    );
  }

  async forceUnlock(made: LockResource | LatchResource): Promise<boolean> {
    const target = this.made.get(made);
    if (!target) throw new InvalidLockOptionError('lock', 'a lock created by this client', made);
    return target.forceUnlock();
  }

  close(): Promise<void> {
    return this.session.close();
  }

  private exclusive(family: Family, name: string, reentrant: boolean): LockResource {
    const parent = lockPath(this.root, family, name);
    return this.track(new ExclusiveQueue(this.nodes, name, parent, { reentrant, type: 'lock' }));
  }

  checkServer(): Promise<ServerFinding[]> {
    const { source, sessionTimeoutMs } = this.options;
    const connectString = 'connectString' in source ? source.connectString : undefined;
    return checkZooKeeperServer(this.session, sessionTimeoutMs, connectString);
  }

  private track<T extends ForceUnlockable>(made: T): T {
    this.made.set(made, made);
    return made;
  }
}

interface ResolvedOptions {
  readonly source: { connectString: string } | { client: Client };
  readonly sessionTimeoutMs: number;
  readonly policy: ConnectionLossPolicy;
  readonly connectTimeoutMs: number;
  readonly root: string;
}

/** Every option checked before anything connects (a refused option must not leave a session open). */
function resolveOptions(options: ZooKeeperLockClientOptions): ResolvedOptions {
  if (typeof options !== 'object' || options === null) {
    throw new InvalidLockOptionError('options', 'an object with connectString or client', options);
  }
  const { connectString, client } = options;
  if ((connectString === undefined) === (client === undefined)) {
    throw new InvalidLockOptionError(
      'connectString',
      'a connect string, or else a client (one of them)',
      connectString,
    );
  }
  if (connectString !== undefined && (typeof connectString !== 'string' || connectString.length === 0)) {
    throw new InvalidLockOptionError('connectString', 'a string such as 127.0.0.1:2181', connectString);
  }
  if (client !== undefined && (typeof client !== 'object' || typeof client?.getSessionId !== 'function')) {
    throw new InvalidLockOptionError('client', 'a node-zookeeper-client client', client);
  }
  const policy = options.connectionLossPolicy ?? 'suspended';
  if (policy !== 'suspended' && policy !== 'lost') {
    throw new InvalidLockOptionError('connectionLossPolicy', "'suspended' or 'lost'", policy);
  }
  return {
    source: connectString !== undefined ? { connectString } : { client: client as Client },
    sessionTimeoutMs: validateLeaseMs(options.sessionTimeoutMs ?? 30_000, 'sessionTimeoutMs'),
    policy,
    connectTimeoutMs: validateLeaseMs(options.connectTimeoutMs ?? 10_000, 'connectTimeoutMs'),
    root: validateRoot(options.root ?? DEFAULT_ROOT),
  };
}

/**
 * Locks of every kind on ZooKeeper (tested on 3.8), with the one API: a thin shell over the generic
 * client and the ZooKeeper backend. Holds have no lease (`leaseMs` is refused): they last until
 * released, or until the session is lost — then every hold's signal aborts at once ('session_lost').
 */
export class ZooKeeperLockClient extends LockClientBase<ZooKeeperBackend> {
  constructor(options: ZooKeeperLockClientOptions) {
    const resolved = resolveOptions(options);
    super((host) => new ZooKeeperBackend(resolved, host), options);
  }

  /** The node-zookeeper-client client of the current session. */
  get zookeeper(): Client {
    return this.backend.session.client;
  }

  /** The current session's id (hex), undefined while there is none. */
  get sessionId(): string | undefined {
    return this.backend.session.id;
  }
}
