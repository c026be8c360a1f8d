// The example backend's client side: a lockstock backend (the `lockstock/backend` SPI) whose store is
// the lock server of server.js. One TCP connection per client is its session: every hold rides on it
// and ends with it (capabilities.leases 'session', resources' leases 'none'); wake-ups are pushed by
// the server to the connections subscribed to a lock.
import { createConnection } from 'node:net';
import { createInterface } from 'node:readline';
import { LockUpgradeError, PermitsMismatchError } from 'lockstock';
import { BackendUnreachableError, Busy, Granted, LockClientBase } from 'lockstock/backend';

/** @typedef {import('lockstock/backend').BackendHost} BackendHost */
/** @typedef {import('lockstock/backend').LockResource} LockResource */

/** @type {import('lockstock/backend').BackendCapabilities} */
const CAPABILITIES = Object.freeze({
  leases: 'session', // the connection carries every hold
  fencing: 'counter', // a counter per lock name on the server
  wakeUps: 'push',
  unsupported: {
    'counter-semaphore': 'every hold ends with its connection: there are no permits without a session',
  },
});

/** One connection to the lock server: requests by id, pushed wake-ups and losses. */
class Session {
  /**
   * @param {{ host: string, port: number }} address
   * @param {{ onWake(name: string, owner?: string): void, onLost(name: string, owner: string): void, onClose(error: Error): void }} events
   */
  constructor(address, events) {
    this.address = `${address.host}:${address.port}`;
    this.pending = new Map();
    this.nextId = 0;
    this.closed = false;
    this.socket = createConnection(address);
    this.socket.setNoDelay(true);
    this.ready = new Promise((resolve, reject) => {
      this.socket.once('connect', resolve);
      this.socket.once('error', reject);
    });
    this.ready.catch(() => undefined); // the first request reports it
    /** @type {NodeJS.ErrnoException | undefined} */
    this.error = undefined;
    this.socket.on('error', (error) => (this.error = error));
    this.socket.on('close', () => {
      const error = this.unreachable(this.closed ? 'the client closed its session' : 'the connection closed');
      for (const { reject } of this.pending.values()) reject(error);
      this.pending.clear();
      if (!this.closed) events.onClose(error);
    });
    const lines = createInterface({ input: this.socket });
    lines.on('error', () => undefined); // the socket's error, kept above: its 'close' follows
    lines.on('line', (line) => {
      const message = JSON.parse(line);
      if (message.wake !== undefined) return events.onWake(message.wake, message.owner);
      if (message.lost !== undefined) return events.onLost(message.lost, message.owner);
      const waiting = this.pending.get(message.id);
      this.pending.delete(message.id);
      waiting?.resolve(message);
    });
  }

  unreachable(detail) {
    return new BackendUnreachableError('socket', this.address, this.error?.code, detail, {
      cause: this.error,
    });
  }

  /** Sends one request and resolves with its answer (rejects once the connection is gone). */
  async request(op, fields) {
    await this.ready.catch((error) => {
      throw this.unreachable(error.message);
    });
    if (this.socket.writableEnded) throw this.unreachable('the connection closed');
    const id = ++this.nextId;
    return new Promise((resolve, reject) => {
      this.pending.set(id, { resolve, reject });
      this.socket.write(`${JSON.stringify({ id, op, ...fields })}\n`);
    });
  }

  close() {
    this.closed = true;
    this.socket.end();
    return new Promise((resolve) => (this.socket.destroyed ? resolve() : this.socket.once('close', resolve)));
  }
}

/** One lock of one kind on the server. Stateless: every call names its owner. */
class SocketLock {
  /** @type {'none'} */
  leases = 'none';
  handsOff = false;

  /**
   * @param {SocketBackend} backend
   * @param {string} name
   * @param {'mutex' | 'reentrant' | 'fair' | 'read' | 'write' | 'semaphore'} kind
   * @param {number} [permits]
   */
  constructor(backend, name, kind, permits) {
    this.backend = backend;
    this.name = name;
    this.kind = kind;
    this.permits = permits;
    // The two sides of a read-write lock share one entry on the server: one wait key, one channel.
    this.waitKey = `${kind === 'read' || kind === 'write' ? 'rw' : kind}:${name}`;
    this.wakeChannel = name;
  }

  /** @param {import('lockstock/backend').AttemptRequest} request */
  async attempt({ owner, waiting }) {
    const answer = await this.backend.session.request('attempt', {
      name: this.name,
      owner,
      kind: this.kind,
      permits: this.permits,
      waiting,
    });
    if (answer.error === 'upgrade') throw new LockUpgradeError(this.name, owner);
    if (answer.error === 'permits')
      throw new PermitsMismatchError(this.name, this.permits ?? 0, answer.stored);
    if (answer.error) throw new Error(answer.error);
    // Refused: wait for the server's push (no retry timer: the wake-up comes when a hold ends).
    if (!answer.granted) return new Busy(undefined);
    return new Granted(answer.token, answer.more ?? false, this.backend.lostPromise(this.name, owner));
  }

  /** @param {string} owner */
  async release(owner) {
    const { outcome } = await this.backend.session.request('release', { name: this.name, owner });
    if (outcome === 'released') this.backend.forget(this.name, owner);
    return { outcome };
  }

  // Holds have no leases (the session carries them): nothing to extend but a hold that is still there.
  /** @param {string} owner */
  async extend(owner) {
    return (await this.holdCount(owner)) > 0 ? 'extended' : 'expired';
  }

  async inspect() {
    const { holders } = await this.backend.session.request('inspect', { name: this.name });
    return { held: holders > 0, holders, remainingMs: undefined };
  }

  /** Who holds it, with the token: with it, the generic client runs elections over the mutex. */
  async readHolder() {
    const { holder } = await this.backend.session.request('inspect', { name: this.name });
    return holder;
  }

  /** @param {string} owner */
  async holdCount(owner) {
    return (await this.backend.session.request('holdCount', { name: this.name, owner })).count;
  }

  /** @param {string} owner */
  leave(owner) {
    // Only a waiting writer (it keeps new readers out) and a fair waiter (its place in the queue)
    // are remembered by the server: forget it.
    if (this.kind !== 'write' && this.kind !== 'fair') return;
    this.backend.session.request('leave', { name: this.name, owner }).catch(() => undefined);
  }
}

/** The backend of one client: its session, its subscriptions, the losses its holds wait on. */
class SocketBackend {
  name = 'socket';
  capabilities = CAPABILITIES;

  /**
   * @param {BackendHost} host
   * @param {{ host: string, port: number }} address
   */
  constructor(host, address) {
    this.host = host;
    this.address = address;
    /** lock name → wake-up listeners of this client */
    this.listeners = new Map();
    /** `${name}\n${owner}` → settles the hold's `lost` promise */
    this.holds = new Map();
    this.subscribe = this.subscribe.bind(this);
  }

  /** The current session, opened on first use (again after the last one closed). */
  get session() {
    this.current ??= this.connect();
    return this.current;
  }

  connect() {
    const session = new Session(this.address, {
      onWake: (name, owner) => this.wake(name, owner),
      onLost: (name, owner) => {
        const key = `${name}\n${owner}`;
        this.holds.get(key)?.('expired');
        this.holds.delete(key);
      },
      onClose: (error) => {
        // The session is gone, and every hold with it: the core loses them all at once. Every waiter
        // tries again (a release may have happened meanwhile), on a new session.
        this.current = undefined;
        this.holds.clear();
        this.host.sessionLost(error);
        for (const name of this.listeners.keys()) this.wake(name);
      },
    });
    // A new session subscribes again to what this client's waiters wait for, before any attempt.
    for (const name of this.listeners.keys()) session.request('subscribe', { name }).catch(() => undefined);
    return session;
  }

  /** A wake-up for the lock's waiters here: a fair lock's names the waiter whose turn it is. */
  wake(name, owner) {
    const wake = owner === undefined ? { to: 'any' } : { to: 'owner', owner };
    for (const listener of this.listeners.get(name) ?? []) listener(wake);
  }

  /** A promise the server's push settles if the hold of `owner` is forced off. */
  lostPromise(name, owner) {
    return new Promise((resolve) => this.holds.set(`${name}\n${owner}`, resolve));
  }

  forget(name, owner) {
    this.holds.delete(`${name}\n${owner}`);
  }

  /** @type {import('lockstock/backend').SubscribeWakes} */
  async subscribe(name, onWake) {
    let listeners = this.listeners.get(name);
    if (!listeners) {
      this.listeners.set(name, (listeners = new Set()));
      await this.session.request('subscribe', { name });
    }
    listeners.add(onWake);
    return () => {
      listeners.delete(onWake);
      if (listeners.size > 0 || this.listeners.get(name) !== listeners) return;
      this.listeners.delete(name);
      this.session.request('unsubscribe', { name }).catch(() => undefined);
    };
  }

  mutex(name) {
    return new SocketLock(this, name, 'mutex');
  }

  reentrant(name) {
    return new SocketLock(this, name, 'reentrant');
  }

  // A fair lock: the server queues every waiting try and names whose turn it is; every waiter's first
  // try is a waiting one, so the queue's order is the order of arrival across clients.
  fair(name) {
    return Object.assign(new SocketLock(this, name, 'fair'), {
      ordering: /** @type {const} */ ('server-order'),
    });
  }

  latch(name) {
    return new SocketLatch(this, name);
  }

  // A spin lock: a reentrant lock whose waiters back off instead of waiting for a push.
  spin(name) {
    return Object.assign(new SocketLock(this, name, 'reentrant'), {
      waitKey: `spin:${name}`,
      wakeChannel: undefined,
    });
  }

  readWrite(name) {
    return { read: new SocketLock(this, name, 'read'), write: new SocketLock(this, name, 'write') };
  }

  semaphore(name, permits) {
    return new SocketLock(this, name, 'semaphore', permits);
  }

  /** @param {LockResource | import('lockstock/backend').LatchResource} made */
  async forceUnlock(made) {
    // A latch's count goes (its waiters are released); a lock's holds end, their holders told.
    if (made instanceof SocketLatch)
      return (await this.session.request('latchReset', { name: made.name })).counting;
    return (await this.session.request('force', { name: made.name })).held;
  }

  async close() {
    await this.current?.close();
  }
}

/**
 * The store's part of a count-down latch (a LatchResource): the count on the server, which pushes a
 * wake-up on `latch:<name>` when a count down reaches zero. The core's wait loop does the waiting.
 */
class SocketLatch {
  /**
   * @param {SocketBackend} backend
   * @param {string} name
   */
  constructor(backend, name) {
    this.backend = backend;
    this.name = name;
    this.wakeChannel = `latch:${name}`;
  }

  /** @param {number} count */
  async trySetCount(count) {
    return (await this.backend.session.request('latchSet', { name: this.name, count })).set;
  }

  async countDown() {
    return (await this.backend.session.request('latchDown', { name: this.name })).left;
  }

  async count() {
    return (await this.backend.session.request('latchCount', { name: this.name })).count;
  }
}

/** A lock client on the example server: the whole lockstock API, from LockClientBase. */
export class SocketLockClient extends LockClientBase {
  /** @param {{ host?: string, port: number, watchdogTimeoutMs?: number }} options */
  constructor({ host = '127.0.0.1', port, ...options }) {
    super((backendHost) => new SocketBackend(backendHost, { host, port }), options);
  }
}
