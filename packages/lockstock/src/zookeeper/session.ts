import * as zookeeper from 'node-zookeeper-client';
import type { Client, Event as ZooKeeperEvent, Stat } from 'node-zookeeper-client';
import {
  BackendUnreachableError,
  Busy,
  monotonicNow,
  type BackendHost,
  type Watch,
} from '../backend/index.js';
import { CONTAINER, teachCreate2Results } from './containers.js';

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

/** Why holds were lost, or why the ZooKeeper side of a call failed: the `cause` the errors carry. */
export class ZooKeeperSessionError extends Error {
  override readonly name = 'ZooKeeperSessionError';
  constructor(
    readonly state: 'suspended' | 'expired' | 'closed',
    message: string,
  ) {
    super(message);
  }
}

/** No answer came (a lost connection, a timeout): the call may or may not have been applied. */
export function unanswered(error: unknown): boolean {
  return (
    error instanceof ZooKeeperSessionError ||
    error instanceof BackendUnreachableError ||
    UNANSWERED.has(codeOf(error) ?? -1)
  );
}

/** The ZooKeeper error code of a driver error (NO_NODE, NODE_EXISTS...), if it is one. */
export function codeOf(error: unknown): number | undefined {
  return error instanceof zookeeper.Exception ? error.getCode() : undefined;
}

export const { NO_NODE, NODE_EXISTS, NOT_EMPTY, BAD_VERSION } = zookeeper.Exception;
const UNANSWERED = new Set([
  zookeeper.Exception.CONNECTION_LOSS,
  zookeeper.Exception.OPERATION_TIMEOUT,
  zookeeper.Exception.SESSION_EXPIRED,
]);

/** Tries of a read (retryRead): each after a reconnection, so a few cover a session's end. */
const READ_RETRIES = 5;

type DriverError = Error | zookeeper.Exception | null;
type Done<T> = (error: DriverError, value?: T) => void;
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
export class ZooKeeperSession {
  generation = 0;
  trust = 0;
  /** Counts the connections made (a reconnection in the same session too): watches of older ones are not relied on. */
  connection = 0;
  private zk: Client;
  private readonly owned: boolean;
  private state: State = 'connecting';
  private sessionId: string | undefined;
  /** Monotonic ms of the last answer from a server. */
  private lastHeard = monotonicNow();
  private suspendedTimer: NodeJS.Timeout | undefined;
  private heartbeat: NodeJS.Timeout | undefined;
  /** Fires when the silence since the last answer would reach the read timeout (startHeartbeat). */
  private silence: NodeJS.Timeout | undefined;
  /** While not connected: drops a connection whose handshake went unanswered (watchHandshake). */
  private handshake: NodeJS.Timeout | undefined;
  /** Fire when the session ends: ZooKeeper never delivers the watches of an expired session. */
  private readonly watches = new Set<() => void>();
  private readonly reconnected = new Set<() => void>();
  private readonly onState = (zk: Client, state: zookeeper.State) => this.changed(zk, state);
  private readonly listeners = new Map<Client, (state: zookeeper.State) => void>();
  /** Told when holds are lost: `ended` when the session (and so every node of it) is gone. */
  private readonly lossListeners: Array<(ended: boolean) => void> = [];
  /** The connect string's chroot (`host:port/app`), made on first need (see mkdirs). */
  private readonly chroot: { hosts: string; path: string } | undefined;
  private chrootMade: Promise<void> | undefined;
  /** Monotonic ms since when no connection was up (made, or lost); undefined while connected. */
  private disconnectedSince: number | undefined = monotonicNow();
  /** Why the driver's last connection attempt failed, while not connected (see watchSocketErrors). */
  private lastSocketFailure: { error?: Error; code?: string; detail: string } | undefined;

  constructor(
    private readonly options: SessionOptions,
    private readonly host: BackendHost,
  ) {
    const { source } = options;
    this.owned = 'connectString' in source;
    this.chroot = 'connectString' in source ? chrootOf(source.connectString) : undefined;
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

  create(path: string, data: Buffer, mode: number): Promise<string> {
    return this.call<string>((zk, done) => zk.create(path, data, mode, done));
  }

  remove(path: string, version = -1): Promise<void> {
    return this.call<void>((zk, done) => zk.remove(path, version, done));
  }

  /**
   * Makes `path` and its missing parents; `container`: `path` itself a container node, which the
   * server deletes once it had children and has none left (a queue's parent: no empty node stays
   * behind per lock name). A chroot in the connect string is made first if it is missing: through it
   * nothing can be created above, so every create would fail with NO_NODE.
   */
  async mkdirs(path: string, { container = false } = {}): Promise<void> {
    const parent = path.slice(0, path.lastIndexOf('/'));
    try {
      await this.mkdirsNow(path, parent, container);
    } catch (error) {
      if (codeOf(error) !== NO_NODE || this.chroot === undefined) throw error;
      await this.ensureChroot();
      await this.mkdirsNow(path, parent, container);
    }
  }

  private async mkdirsNow(path: string, parent: string, container: boolean): Promise<void> {
    if (!container) return this.call<void>((zk, done) => zk.mkdirp(path, (error) => done(error)));
    for (let attempt = 1; ; attempt++) {
      if (parent !== '') await this.call<void>((zk, done) => zk.mkdirp(parent, (error) => done(error)));
      try {
        return await this.createContainer(path);
      } catch (error) {
        if (codeOf(error) === NODE_EXISTS) return;
        // The parent went meanwhile (a container of someone else's layout reaped): make it again.
        if (codeOf(error) !== NO_NODE || attempt >= 3) throw error;
      }
    }
  }

  /** Creates a container node (inside a multi: the driver knows no createContainer request). */
  private createContainer(path: string): Promise<void> {
    teachCreate2Results();
    return this.call<void>((zk, done) =>
      zk
        .transaction()
        .create(path, Buffer.alloc(0), CONTAINER)
        .commit((error) => done(error)),
    );
  }

  /**
   * Makes the connect string's chroot, once per lock client (Curator's namespace does the same):
   * through a client of its own without the chroot, since a client inside it cannot reach above it.
   */
  private ensureChroot(): Promise<void> {
    const chroot = this.chroot;
    if (chroot === undefined) return Promise.resolve();
    this.chrootMade ??= makeChroot(chroot.hosts, chroot.path, this.timeoutMs());
    this.chrootMade.catch(() => (this.chrootMade = undefined)); // failed: the next create tries again
    return this.chrootMade;
  }

  getChildren(path: string, watcher?: (event: ZooKeeperEvent) => void): Promise<string[]> {
    return this.call<string[]>((zk, done) =>
      watcher ? zk.getChildren(path, watcher, done) : zk.getChildren(path, done),
    );
  }

  getData(path: string, watcher?: (event: ZooKeeperEvent) => void): Promise<{ data: Buffer; stat: Stat }> {
    return this.call((zk, done: Done<{ data: Buffer; stat: Stat }>) => {
      const answer = (error: DriverError, data: Buffer | undefined, stat: Stat) =>
        done(error, { data: data ?? Buffer.alloc(0), stat });
      if (watcher) zk.getData(path, watcher, answer);
      else zk.getData(path, answer);
    });
  }

  /** The node's stat, or undefined when there is none. */
  exists(path: string, watcher?: (event: ZooKeeperEvent) => void): Promise<Stat | undefined> {
    return this.call((zk, done: Done<Stat | undefined>) => {
      const answer = (error: DriverError, stat: Stat | null) => done(error, stat ?? undefined);
      if (watcher) zk.exists(path, watcher, answer);
      else zk.exists(path, answer);
    });
  }

  setData(path: string, data: Buffer, version: number): Promise<Stat> {
    return this.call<Stat>((zk, done) => zk.setData(path, data, version, done));
  }

  /**
   * A read retried through a reconnection (Curator's RetryLoop): a read is safe to repeat, and one in
   * flight when the connection drops (a session moved or expired on the server) fails with the
   * driver's CONNECTION_LOSS though the next connection — or the next session — answers it. It is
   * sent again once connected, for at most a session timeout after its first failure (and
   * READ_RETRIES times); a client without a connection for connectTimeoutMs fails with the
   * connection error, as every call does, and a closed client at once.
   */
  async retryRead<T>(read: () => Promise<T>): Promise<T> {
    let deadline: number | undefined;
    for (let attempt = 1; ; attempt++) {
      try {
        return await read();
      } catch (error) {
        const lost =
          UNANSWERED.has(codeOf(error) ?? -1) ||
          (error instanceof ZooKeeperSessionError && error.state !== 'closed');
        deadline ??= monotonicNow() + this.timeoutMs();
        if (!lost || attempt >= READ_RETRIES || monotonicNow() >= deadline) throw error;
        await this.whenReachable().changed;
      }
    }
  }

  /**
   * A one-shot watch: give `watcher` to a read; `watch.changed` settles on the watcher's event, or
   * when the session ends. Cancelling forgets it (the driver cannot remove a watch it set).
   */
  newWatch(): { watcher: () => void; watch: Watch } {
    let resolve!: () => void;
    const changed = new Promise<void>((settle) => (resolve = settle));
    const fire = () => {
      this.watches.delete(fire);
      resolve();
    };
    this.watches.add(fire);
    return { watcher: fire, watch: { changed, cancel: () => this.watches.delete(fire) } };
  }

  /**
   * What a waiting attempt answers when its call went unanswered (`error`), or when it finds no
   * connection: a refusal that sleeps until the client is connected again — or until it has been
   * without a connection for `connectTimeoutMs`, when this throws the connection error (the waiter
   * then fails with LockConnectionError instead of waiting silently for ever).
   */
  rideOut(error?: unknown): Busy {
    if (error instanceof BackendUnreachableError) throw error;
    if (this.state !== 'connected' && this.state !== 'closed' && this.unreachableInMs() <= 0) {
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

  /** Milliseconds left until the client has been without a connection for connectTimeoutMs. */
  private unreachableInMs(): number {
    if (this.disconnectedSince === undefined) return Infinity;
    return this.disconnectedSince + this.options.connectTimeoutMs - monotonicNow();
  }

  private unreachable(): BackendUnreachableError {
    const failure = this.lastSocketFailure;
    const since = this.disconnectedSince ?? monotonicNow();
    const forMs = Math.round(monotonicNow() - since);
    const timedOut = forMs >= this.options.connectTimeoutMs;
    const what = this.sessionId === undefined && this.generation === 0 ? 'no connection' : 'disconnected';
    const detail = `${what} for ${forMs} ms${
      timedOut ? ` (connectTimeoutMs: ${this.options.connectTimeoutMs})` : ''
    }${failure?.detail ? `; ${failure.detail}` : ''}`;
    return new BackendUnreachableError('zookeeper', this.address(), failure?.code, detail, {
      cause: failure?.error,
    });
  }

  /** The servers, as given (the connect string), or the caller's client's. */
  private address(): string {
    if ('connectString' in this.options.source) return this.options.source.connectString;
    const servers = driverInternals(this.zk)?.servers;
    const named = Array.isArray(servers)
      ? servers.map((server) => {
          const { host, port } = server as { host?: unknown; port?: unknown };
          return `${String(host)}:${String(port)}`;
        })
      : [];
    return named.length > 0 ? named.join(',') : "the ZooKeeper client's servers";
  }

  /** Settles once connected, or once the client has been without a connection for connectTimeoutMs. */
  private whenReachable(): Watch {
    const connected = this.whenConnected();
    const left = this.unreachableInMs();
    if (left === Infinity) return connected;
    let timer: NodeJS.Timeout | undefined;
    const due = new Promise<void>((resolve) => (timer = setTimeout(resolve, Math.max(0, left) + 1)));
    return {
      changed: Promise.race([connected.changed, due]).finally(() => clearTimeout(timer)),
      cancel: () => {
        clearTimeout(timer);
        connected.cancel();
      },
    };
  }

  /** Settles once the client is connected (at once if it is), or the session ended meanwhile. */
  whenConnected(): Watch {
    // Closed: nothing will connect again; whoever waits must look now (and learn it is closed).
    if (this.state === 'connected' || this.state === 'closed')
      return { changed: Promise.resolve(), cancel: () => undefined };
    let resolve!: () => void;
    const changed = new Promise<void>((settle) => (resolve = settle));
    const fire = () => {
      this.reconnected.delete(fire);
      resolve();
    };
    this.reconnected.add(fire);
    return { changed, cancel: () => this.reconnected.delete(fire) };
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
    this.stopHeartbeat();
    this.host.sessionLost(new ZooKeeperSessionError('closed', 'the lock client was closed'));
    this.fireAll();
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
    this.watchHandshake(zk);
    this.watchSocketErrors(zk);
  }

  /**
   * The driver drops its sockets' errors (it only reconnects): its manager's handlers, bound per
   * socket from the instance, are wrapped here so the connection error can say why — ECONNREFUSED,
   * ENOTFOUND, a connect that timed out.
   */
  private watchSocketErrors(zk: Client): void {
    const manager = driverInternals(zk) as
      (DriverManager & { onSocketError?: unknown; onSocketConnectTimeout?: unknown }) | undefined;
    if (!manager) return;
    const onError = manager.onSocketError;
    const onTimeout = manager.onSocketConnectTimeout;
    if (typeof onError === 'function') {
      manager.onSocketError = (error: Error & { code?: unknown }) => {
        if (zk === this.zk && this.state !== 'connected') {
          const code = typeof error?.code === 'string' ? error.code : undefined;
          const detail = code === undefined ? `the last attempt: ${error?.message}` : '';
          this.lastSocketFailure = { error, code, detail };
        }
        return (onError as (error: Error) => unknown).call(manager, error);
      };
    }
    if (typeof onTimeout === 'function') {
      manager.onSocketConnectTimeout = () => {
        if (zk === this.zk && this.state !== 'connected') {
          this.lastSocketFailure = { code: 'ETIMEDOUT', detail: '' };
        }
        return (onTimeout as () => unknown).call(manager);
      };
    }
  }

  /**
   * The driver times a connection attempt only until TCP connects: a server that accepts the socket
   * but never answers the session handshake (one still starting up, seen on a loaded machine) holds
   * the driver in CONNECTING for ever — an election started while ZooKeeper was down was then never
   * elected. So while not connected, a socket still open, still without a session, a whole connect
   * timeout after it was first seen (the driver's: the session timeout shared among the servers, as
   * ZooKeeper's Java client does) is dropped; the driver then tries again (the next server).
   */
  private watchHandshake(zk: Client): void {
    clearInterval(this.handshake);
    const manager = driverInternals(zk);
    const servers = Math.max(1, manager?.servers?.length ?? 1);
    const connectTimeoutMs = Math.max(100, Math.floor(this.options.sessionTimeoutMs / servers));
    let seen: DriverSocket | undefined;
    this.handshake = setInterval(() => {
      if (this.state === 'closed' || zk !== this.zk) return clearInterval(this.handshake);
      if (this.state === 'connected') return void (seen = undefined);
      const socket = manager?.socket;
      const unanswered = manager?.state === DRIVER_CONNECTING && socket?.readyState === 'open';
      if (unanswered && socket === seen) {
        this.lastSocketFailure = {
          detail:
            'the last attempt: a server accepted the connection but never answered the session handshake',
        };
        socket.destroy?.();
      }
      seen = unanswered ? socket : undefined;
    }, connectTimeoutMs);
    this.handshake.unref();
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
    this.disconnectedSince = undefined;
    this.lastSocketFailure = undefined;
    this.lastHeard = monotonicNow();
    clearTimeout(this.suspendedTimer);
    this.startHeartbeat();
    for (const fire of [...this.reconnected]) fire();
  }

  private suspend(): void {
    if (this.state !== 'connected') return; // never connected yet, or suspended already
    this.state = 'suspended';
    this.disconnectedSince = monotonicNow();
    this.stopHeartbeat();
    const cause = new ZooKeeperSessionError(
      'suspended',
      'the connection to ZooKeeper was lost; the session may survive if a server answers within its timeout',
    );
    this.host.events.emit('connectionError', cause);
    if (this.options.policy === 'suspended') this.loseHolds(cause, false);
    // The server ends the session a session timeout after it last heard from us: counted from the
    // last answer (a process resumed after a long pause learns at once that its session is gone).
    const timeoutMs = this.timeoutMs();
    const left = Math.max(0, timeoutMs - (monotonicNow() - this.lastHeard));
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
    this.stopHeartbeat();
    this.generation++;
    this.sessionId = undefined;
    this.disconnectedSince ??= monotonicNow();
    this.host.events.emit('connectionError', cause);
    this.loseHolds(cause, true);
    this.fireAll();
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

  private fireAll(): void {
    for (const fire of [...this.watches, ...this.reconnected]) fire();
  }

  /**
   * The driver pings every third of the timeout but never checks the answers: a connection that
   * went silent stays "connected". Every third of the timeout, a silence longer than 2/3 of it drops
   * the socket (the driver then reconnects, to another member if it can), else one cheap read asks.
   */
  private startHeartbeat(): void {
    this.stopHeartbeat();
    const timeoutMs = this.timeoutMs();
    const readTimeoutMs = (timeoutMs * 2) / 3;
    this.heartbeat = setInterval(
      () => {
        if (this.state !== 'connected') return;
        this.zk.exists('/', (error) => {
          if (!error || !UNANSWERED.has(codeOf(error) ?? -1)) this.lastHeard = monotonicNow();
        });
      },
      Math.max(10, Math.floor(timeoutMs / 3)),
    );
    this.heartbeat.unref();
    // The silence is timed from the last answer itself, not looked at on the pings' ticks: a tick's
    // answer arrives a moment after the tick, so the tick 2/3 of a timeout later found a silence just
    // short of the read timeout, and only the next one — a whole session timeout after the last
    // answer, when the server may already have expired the session — dropped the connection.
    const watchSilence = () => {
      if (this.state !== 'connected') return;
      const left = this.lastHeard + readTimeoutMs - monotonicNow();
      if (left < 0) return this.dropConnection();
      this.silence = setTimeout(watchSilence, left + 1);
      this.silence.unref();
    };
    watchSilence();
  }

  private stopHeartbeat(): void {
    clearInterval(this.heartbeat);
    clearTimeout(this.silence);
  }

  /** Closes the silent socket under the driver (it reconnects); suspends ourselves in any case. */
  private dropConnection(): void {
    try {
      driverInternals(this.zk)?.socket?.destroy?.();
    } catch {
      // The driver's internals moved: the suspension below still applies the policy.
    }
    this.suspend();
  }

  /**
   * One driver call, bounded by the session timeout (the driver would wait for a reconnection), and
   * while there is no connection by the connect timeout: past it, calls fail at once with the
   * connection error (nothing is queued in the driver), and a call waiting for a connection fails
   * with it when the connect timeout ends.
   */
  private call<T>(run: (zk: Client, done: Done<T>) => void): Promise<T> {
    if (this.state === 'closed') {
      return Promise.reject(new ZooKeeperSessionError('closed', 'the lock client is closed'));
    }
    if (this.state !== 'connected' && this.unreachableInMs() <= 0) return Promise.reject(this.unreachable());
    return new Promise<T>((resolve, reject) => {
      const timeoutMs = this.timeoutMs();
      const startedAt = monotonicNow();
      let timer: NodeJS.Timeout;
      const arm = () => {
        const left = startedAt + timeoutMs - monotonicNow();
        timer = setTimeout(
          () => {
            if (this.state !== 'connected' && this.state !== 'closed' && this.unreachableInMs() <= 0) {
              reject(this.unreachable());
            } else if (monotonicNow() - startedAt >= timeoutMs) {
              reject(
                new ZooKeeperSessionError('suspended', `ZooKeeper did not answer within ${timeoutMs} ms`),
              );
            } else arm(); // connected meanwhile: the session timeout bounds the call
          },
          Math.max(0, Math.min(left, this.unreachableInMs() + 1)),
        );
      };
      arm();
      run(this.zk, (error, value) => {
        clearTimeout(timer);
        if (!error || !UNANSWERED.has(codeOf(error) ?? -1)) this.lastHeard = monotonicNow();
        if (error)
          reject(error as Error); // the driver's Exception is an Error at run time
        else resolve(value as T);
      });
    });
  }
}

/** The driver's connection manager, as far as lockstock reaches into it (all of it may be missing). */
interface DriverManager {
  socket?: DriverSocket;
  state?: number;
  servers?: unknown[];
  onSocketData?: unknown;
  onSocketConnected?: unknown;
  connect?: unknown;
}
interface DriverSocket {
  readyState?: string;
  destroy?: () => void;
}

/** The driver's CONNECTING state: a socket is being opened, or its session handshake answered. */
const DRIVER_CONNECTING = 1;

function driverInternals(zk: Client): DriverManager | undefined {
  return (zk as unknown as { connectionManager?: DriverManager }).connectionManager;
}

/** Closes a driver client; when it was connected, waits (bounded) until the server ended the session. */
async function closeClient(zk: Client, connected: boolean): Promise<void> {
  if (!connected) {
    closeUnconnected(zk);
    return;
  }
  const closed = connected
    ? new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, 2_000);
        zk.once('disconnected', () => {
          clearTimeout(timer);
          resolve();
        });
      })
    : Promise.resolve();
  try {
    zk.close();
  } catch {
    // An expired client is closed already.
  }
  await closed;
}

/**
 * Closes a driver client that is not connected. The driver's close() queues a close request and
 * parses whatever arrives next as the answer to a request: had it sent its connect request (or does
 * so later, from a reconnection already scheduled), the server's connect answer is read as a reply
 * with a nonsense error code, and the driver throws from its socket handler (an uncaught exception:
 * the process dies). So the driver is stopped instead: nothing that arrives is read any more, a
 * socket that connects is closed at once, no reconnection starts (a socket closing after the driver
 * reached CLOSED would start one, for ever), and the current socket goes.
 */
function closeUnconnected(zk: Client): void {
  const manager = driverInternals(zk);
  try {
    if (manager) {
      // Instance properties: each socket made from now on binds these, not the driver's own.
      manager.onSocketData = () => undefined;
      manager.onSocketConnected = () => manager.socket?.destroy?.();
      manager.connect = () => undefined;
    }
    zk.close();
    manager?.socket?.destroy?.();
  } catch {
    // An expired client is closed already.
  }
}

/** The chroot of a connect string (`a:1,b:2/app/x` → hosts `a:1,b:2`, path `/app/x`), if it has one. */
export function chrootOf(connectString: string): { hosts: string; path: string } | undefined {
  const slash = connectString.indexOf('/');
  if (slash < 0) return undefined;
  const path = connectString.slice(slash).replace(/\/+$/, '');
  return path === '' ? undefined : { hosts: connectString.slice(0, slash), path };
}

/** Creates `path` (and its parents) through a short-lived client of `hosts`, without a chroot. */
async function makeChroot(hosts: string, path: string, timeoutMs: number): Promise<void> {
  const zk = zookeeper.createClient(hosts, { sessionTimeout: timeoutMs, spinDelay: 100, retries: 0 });
  let connected = false;
  try {
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(
        () =>
          reject(new ZooKeeperSessionError('suspended', `ZooKeeper did not answer within ${timeoutMs} ms`)),
        timeoutMs,
      );
      zk.once('connected', () => {
        connected = true;
        zk.mkdirp(path, (error) => {
          clearTimeout(timer);
          if (error) reject(error as Error);
          else resolve();
        });
      });
      zk.connect();
    });
  } finally {
    await closeClient(zk, connected);
  }
}
