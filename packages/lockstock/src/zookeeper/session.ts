import * as zookeeper from 'node-zookeeper-client';
import type { Client } from 'node-zookeeper-client';
import {
  BackendUnreachableError,
  Busy,
  monotonicNow,
  type BackendHost,
  type Watch,
} from '../backend/index.js';
import {
  destroySocket,
  driverAddress,
  closeClient,
  watchHandshake,
  watchSocketErrors,
  type SocketFailure,
} from './driver.js';
import { ZooKeeperSessionError, type Done } from './errors.js';
import { ReadTimeout } from './heartbeat.js';
import { SessionCalls } from './calls.js';
import { SessionWaits } from './waits.js';
import { PathMaker } from './mkdirs.js';
import { Reachability } from './reachability.js';

// The session's modules: its errors (errors.ts), the driver's internals (driver.ts), the read timeout
// (heartbeat.ts), the connect timeout (reachability.ts), the paths made on demand (mkdirs.ts), the
// typed calls and the read retry (calls.ts).
export {
  BAD_VERSION,
  codeOf,
  NO_NODE,
  NODE_EXISTS,
  NOT_EMPTY,
  unanswered,
  ZooKeeperSessionError,
} from './errors.js';
export { chrootOf } from './mkdirs.js';

/**
 * What a lost connection means for the holds (Curator's ConnectionStateErrorPolicy):
 * - 'suspended' (StandardConnectionStateErrorPolicy): every hold is lost as soon as the connection
 *   is — the session may survive, but nobody can tell until it reconnects, and another client may
 *   hold the lock by then. The safe default.
 * - 'lost' (SessionConnectionStateErrorPolicy): holds are lost only when the session is — it
 *   expired, or no server answered for a whole session timeout (then it is taken as expired, as
 *   Curator does). Holds survive a failover to another member of the ensemble.
 */
export type ConnectionLossPolicy = 'suspended' | 'lost';

type State = 'connecting' | 'connected' | 'suspended' | 'closed';

export interface SessionOptions {
  /** Where to connect (a client is made, and remade after each expiry), or the caller's own client. */
  readonly source: { connectString: string } | { client: Client };
  readonly sessionTimeoutMs: number;
  readonly policy: ConnectionLossPolicy;
  /** How long the client may be without a connection before calls fail with the connection error. */
  readonly connectTimeoutMs: number;
}

/**
 * The ZooKeeper session every hold of one lock client lives in (ephemeral nodes end with it), and
 * the calls made in it. node-zookeeper-client reports connected / disconnected / expired; this adds
 * what locks need on top:
 * - the policy above: holds are lost through `host.sessionLost` (every signal aborts at once);
 * - a read timeout the driver lacks: a connection that stops answering (a partition, a hung server:
 *   nothing closes the socket) is dropped after 2/3 of the session timeout, as ZooKeeper's Java
 *   client does, so the driver moves to another member and the policy applies;
 * - a session not answered for its whole timeout is taken as expired (Curator injects the expiry):
 *   a partitioned client must learn it lost its holds even if it never reaches a server again;
 * - after an expiry a new session (a new driver client, when the lock client made it) serves new
 *   acquires, and every watch of the old one fires (its waiters try again, in the new session);
 * - a timeout on every call (the driver queues calls while disconnected, for ever);
 * - a connect timeout: without a connection for `connectTimeoutMs` (since the client was made, or
 *   since it lost its connection), calls fail with a BackendUnreachableError naming the servers and
 *   the socket's last error (ECONNREFUSED, ENOTFOUND...), and waiting attempts stop riding it out
 *   (see `rideOut`); once connected again, calls go through as before.
 * `generation` counts the sessions (nodes of an older one are gone); `trust` counts the moments from
 * which holds granted before can no longer be trusted.
 */
export class ZooKeeperSession extends SessionCalls {
  generation = 0;
  trust = 0;
  /** Counts the connections made (a reconnection in the same session too): watches of older ones are not relied on. */
  connection = 0;
  private zk: Client;
  private readonly owned: boolean;
  private state: State = 'connecting';
  private sessionId: string | undefined;
  private suspendedTimer: NodeJS.Timeout | undefined;
  private readonly readTimeout = new ReadTimeout();
  /** While not connected: drops a connection whose handshake went unanswered (watchHandshake). */
  private handshake: NodeJS.Timeout | undefined;
  private readonly reach: Reachability;
  private readonly paths: PathMaker;
  private readonly waits = new SessionWaits();
  private readonly onState = (zk: Client, state: zookeeper.State) => this.changed(zk, state);
  private readonly listeners = new Map<Client, (state: zookeeper.State) => void>();
  /** Told when holds are lost: `ended` when the session (and so every node of it) is gone. */
  private readonly lossListeners: Array<(ended: boolean) => void> = [];
  constructor(
    private readonly options: SessionOptions,
    private readonly host: BackendHost,
  ) {
    super();
    const { source } = options;
    this.owned = 'connectString' in source;
    this.reach = new Reachability(options.connectTimeoutMs, () => this.address());
    const connectString = 'connectString' in source ? source.connectString : undefined;
    this.paths = new PathMaker(
      (run) => this.call(run),
      connectString,
      () => this.timeoutMs(),
    );
    this.zk = 'connectString' in source ? this.open(source.connectString) : this.adopt(source.client);
  }

  /** The driver client of the current session. */
  get client(): Client {
    return this.zk;
  }

  /** The session id (hex) while connected or suspended, else undefined. */
  get id(): string | undefined {
    return this.sessionId;
  }

  get connected(): boolean {
    return this.state === 'connected';
  }

  onHoldsLost(listener: (ended: boolean) => void): void {
    this.lossListeners.push(listener);
  }

  /** The session timeout in force: the server's answer once connected (it bounds it to 2–20 ticks). */
  timeoutMs(): number {
    return this.sessionId !== undefined ? this.zk.getSessionTimeout() : this.options.sessionTimeoutMs;
  }

  /**
   * Makes `path` and its missing parents; `container`: `path` itself a container node, which the
   * server deletes once it had children and has none left (a queue's parent: no empty node stays
   * behind per lock name). A chroot in the connect string is made first if it is missing: through it
   * nothing can be created above, so every create would fail with NO_NODE.
   */
  mkdirs(path: string, options: { container?: boolean } = {}): Promise<void> {
    return this.paths.mkdirs(path, options);
  }

  /**
   * A one-shot watch: give `watcher` to a read; `watch.changed` settles on the watcher's event, or
   * when the session ends. Cancelling forgets it (the driver cannot remove a watch it set).
   */
  newWatch(): { watcher: () => void; watch: Watch } {
    return this.waits.newWatch();
  }

  /**
   * What a waiting attempt answers when its call went unanswered (`error`), or when it finds no
   * connection: a refusal that sleeps until the client is connected again — or until it has been
   * without a connection for `connectTimeoutMs`, when this throws the connection error (the waiter
   * then fails with LockConnectionError instead of waiting silently for ever).
   */
  rideOut(error?: unknown): Busy {
    if (error instanceof BackendUnreachableError) throw error;
    if (this.state !== 'connected' && this.state !== 'closed' && this.reach.inMs() <= 0) {
      throw this.unreachable();
    }
    return new Busy(undefined, this.whenReachable());
  }

  /** Whether there is no connection now (not closed): a waiting attempt rides it out at once. */
  get disconnected(): boolean {
    return this.state === 'connecting' || this.state === 'suspended';
  }

  /**
   * The connection error while the client has no connection (`undefined` while it has one): the
   * servers, the socket's last error and for how long — what a LockTimeoutError ending meanwhile says.
   */
  unreachableNow(): BackendUnreachableError | undefined {
    return this.disconnected ? this.unreachable() : undefined;
  }

  private unreachable(): BackendUnreachableError {
    return this.reach.error(this.sessionId === undefined && this.generation === 0);
  }

  /** The servers, as given (the connect string), or the caller's client's. */
  private address(): string {
    if ('connectString' in this.options.source) return this.options.source.connectString;
    return driverAddress(this.zk) ?? "the ZooKeeper client's servers";
  }

  /** Settles once connected, or once the client has been without a connection for connectTimeoutMs. */
  protected whenReachable(): Watch {
    return this.reach.untilReachable(this.whenConnected());
  }

  /** Settles once the client is connected (at once if it is), or the session ended meanwhile. */
  whenConnected(): Watch {
    // Closed: nothing will connect again; whoever waits must look now (and learn it is closed).
    if (this.state === 'connected' || this.state === 'closed')
      return { changed: Promise.resolve(), cancel: () => undefined };
    return this.waits.nextConnection();
  }

  /**
   * Ends the session (when the lock client made it: its ephemeral nodes go at once) and every hold
   * with it; waiters wake and fail. A client the caller owns is left open, and untouched.
   */
  async close(): Promise<void> {
    if (this.state === 'closed') return;
    const wasConnected = this.state === 'connected';
    this.state = 'closed';
    clearTimeout(this.suspendedTimer);
    clearInterval(this.handshake);
    this.readTimeout.stop();
    this.host.sessionLost(new ZooKeeperSessionError('closed', 'the lock client was closed'));
    this.waits.fireAll();
    for (const [zk, listener] of this.listeners) zk.removeListener('state', listener);
    this.listeners.clear();
    if (this.owned) await closeClient(this.zk, wasConnected);
  }

  private open(connectString: string): Client {
    const zk = zookeeper.createClient(connectString, {
      sessionTimeout: this.options.sessionTimeoutMs,
      spinDelay: 100, // a pause after every member was tried once: short, members restart quickly
      retries: 0, // retried here, where a retry is safe (a protected create), not blindly
    });
    this.listen(zk);
    zk.connect();
    return zk;
  }

  private adopt(zk: Client): Client {
    this.listen(zk);
    if (zk.getState() === zookeeper.State.SYNC_CONNECTED)
      queueMicrotask(() => this.changed(zk, zk.getState()));
    return zk;
  }

  private listen(zk: Client): void {
    const listener = (state: zookeeper.State) => this.onState(zk, state);
    this.listeners.set(zk, listener);
    zk.on('state', listener);
    // Why an attempt failed matters while this client is the session's and not connected.
    const failed = (failure: SocketFailure) => {
      if (zk === this.zk && this.state !== 'connected') this.reach.failed(failure);
    };
    clearInterval(this.handshake);
    this.handshake = watchHandshake(
      zk,
      this.options.sessionTimeoutMs,
      () =>
        this.state === 'closed' || zk !== this.zk
          ? 'gone'
          : this.state === 'connected'
            ? 'connected'
            : 'connecting',
      failed,
    );
    watchSocketErrors(zk, failed);
  }

  private changed(zk: Client, state: zookeeper.State): void {
    if (zk !== this.zk || this.state === 'closed') return; // a replaced client's last words
    if (state === zookeeper.State.SYNC_CONNECTED) this.connectedTo(zk);
    else if (state === zookeeper.State.DISCONNECTED) this.suspend();
    else if (state === zookeeper.State.EXPIRED) {
      this.end(new ZooKeeperSessionError('expired', 'the ZooKeeper session expired'));
    } else if (state === zookeeper.State.AUTH_FAILED) {
      this.end(new ZooKeeperSessionError('expired', 'ZooKeeper refused the session: authentication failed'));
    }
  }

  private connectedTo(zk: Client): void {
    const id = zk.getSessionId().toString('hex');
    if (this.sessionId !== undefined && id !== this.sessionId) {
      this.end(new ZooKeeperSessionError('expired', 'the client connected with a new session'));
    }
    this.sessionId = id;
    this.connection++;
    this.state = 'connected';
    this.reach.connected();
    this.readTimeout.heard();
    clearTimeout(this.suspendedTimer);
    this.readTimeout.start(
      () => this.zk,
      this.timeoutMs(),
      () => this.state === 'connected',
      () => this.dropConnection(),
    );
    this.waits.connected();
  }

  private suspend(): void {
    if (this.state !== 'connected') return; // never connected yet, or suspended already
    this.state = 'suspended';
    this.reach.lost();
    this.readTimeout.stop();
    const cause = new ZooKeeperSessionError(
      'suspended',
      'the connection to ZooKeeper was lost; the session may survive if a server answers within its timeout',
    );
    this.host.events.emit('connectionError', cause);
    if (this.options.policy === 'suspended') this.loseHolds(cause, false);
    // The server ends the session a session timeout after it last heard from us: counted from the
    // last answer (a process resumed after a long pause learns at once that its session is gone).
    const timeoutMs = this.timeoutMs();
    const left = Math.max(0, timeoutMs - (monotonicNow() - this.readTimeout.lastHeard));
    this.suspendedTimer = setTimeout(() => {
      if (this.state !== 'suspended') return;
      this.end(
        new ZooKeeperSessionError(
          'expired',
          `no ZooKeeper server answered for the session timeout (${timeoutMs} ms): the session is taken as expired`,
        ),
      );
    }, left);
    this.suspendedTimer.unref();
  }

  /** The session is over: its nodes are gone (or will be), its holds lost, a new session takes over. */
  private end(cause: ZooKeeperSessionError): void {
    clearTimeout(this.suspendedTimer);
    this.readTimeout.stop();
    this.generation++;
    this.sessionId = undefined;
    this.reach.lost({ keep: true });
    this.host.events.emit('connectionError', cause);
    this.loseHolds(cause, true);
    this.waits.fireAll();
    if (this.owned && this.state !== 'closed') {
      const old = this.zk;
      const listener = this.listeners.get(old);
      if (listener) old.removeListener('state', listener);
      this.listeners.delete(old);
      this.state = 'connecting';
      this.zk = this.open((this.options.source as { connectString: string }).connectString);
      void closeClient(old, false);
    } else if (this.state !== 'closed') this.state = 'connecting';
  }

  private loseHolds(cause: ZooKeeperSessionError, ended: boolean): void {
    this.trust++;
    this.host.sessionLost(cause);
    for (const listener of this.lossListeners) listener(ended);
  }

  /** Closes the silent socket under the driver (it reconnects); suspends ourselves in any case. */
  private dropConnection(): void {
    destroySocket(this.zk); // if the driver's internals moved, the suspension still applies the policy
    this.suspend();
  }

  /**
   * One driver call, bounded by the session timeout (the driver would wait for a reconnection), and
   * while there is no connection by the connect timeout: past it, calls fail at once with the
   * connection error (nothing is queued in the driver), and a call waiting for a connection fails
   * with it when the connect timeout ends.
   */
  protected call<T>(run: (zk: Client, done: Done<T>) => void): Promise<T> {
    if (this.state === 'closed') {
      return Promise.reject(new ZooKeeperSessionError('closed', 'the lock client is closed'));
    }
    if (this.state !== 'connected' && this.reach.inMs() <= 0) return Promise.reject(this.unreachable());
    return new Promise<T>((resolve, reject) => {
      const timeoutMs = this.timeoutMs();
      const startedAt = monotonicNow();
      let timer: NodeJS.Timeout;
      const arm = () => {
        const left = startedAt + timeoutMs - monotonicNow();
        timer = setTimeout(
          () => {
            if (this.state !== 'connected' && this.state !== 'closed' && this.reach.inMs() <= 0) {
              reject(this.unreachable());
            } else if (monotonicNow() - startedAt >= timeoutMs) {
              reject(
                new ZooKeeperSessionError('suspended', `ZooKeeper did not answer within ${timeoutMs} ms`),
              );
            } else arm(); // connected meanwhile: the session timeout bounds the call
          },
          Math.max(0, Math.min(left, this.reach.inMs() + 1)),
        );
      };
      arm();
      run(this.zk, (error, value) => {
        clearTimeout(timer);
        this.readTimeout.heard(error);
        if (error)
          reject(error as Error); // the driver's Exception is an Error at run time
        else resolve(value as T);
      });
    });
  }
}
