import type { Etcd3 } from 'etcd3';
import {
  validateLeaseMs,
  type BackendCapabilities,
  type BackendHost,
  type LockBackend,
  type LatchResource,
  type LockClientOptions,
  type LockResource,
} from '../backend/index.js';
import { InvalidLockOptionError } from '../locks/errors.js';
import type { Election } from '../locks/types.js';
import { etcd3 } from './driver.js';
import { EtcdElection } from './election.js';
import { ExclusiveResource, type ExclusiveOptions } from './exclusive.js';
import type { Family } from './keys.js';
import { EtcdLatch } from './latch.js';
import { OwnedKeys } from './owned.js';
import { readWriteResources } from './read-write.js';
import { EtcdResource, type EtcdContext } from './resource.js';
import { SemaphoreResource } from './semaphore.js';
import { EtcdSession, EtcdSessionEndedError } from './session.js';
import { cmp, EtcdStore, op } from './store.js';
import { checkEtcdServer } from './server-checks.js';
import type { ServerFinding } from '../locks/server-checks.js';

export interface EtcdLockClientOptions extends LockClientOptions {
  /** etcd's client URLs (`http://127.0.0.1:2379`): the lock client connects, and closes on close(). */
  hosts?: string | string[];
  /** An etcd3 `Etcd3` client you own instead of `hosts` (close() leaves it open). */
  etcd?: Etcd3;
  /**
   * Prefix of every key the locks put; a lock's keys look like `<prefix>/<name>/<family>/...`.
   * @default 'ls'
   */
  keyPrefix?: string;
  /**
   * TTL of the session's lease, in seconds (etcd grants at least its minimum, 2 s by default): how
   * long a crashed, cut-off or paused client keeps its locks, and keeps others waiting. The session is
   * kept alive every third of it. Holds have no lease of their own: `leaseMs` is refused.
   * @default 30
   */
  sessionTtlSeconds?: number;
  /**
   * Deadline of each etcd request, ms: an acquire fails with LockBackendError rather than hang while
   * etcd does not answer.
   * @default 5000
   */
  requestTimeoutMs?: number;
}

const ETCD_CAPABILITIES: BackendCapabilities = Object.freeze({
  leases: 'session',
  fencing: 'native',
  wakeUps: 'watch',
  unsupported: Object.freeze({
    'counter-semaphore':
      'every etcd key of a lock lives on its client session’s lease, so a crashed holder’s permit always ' +
      'comes back — a permit that outlives its holder is what the session exists to prevent; use semaphore()',
  }),
  // In the value of each holder's key, put with it (value.ts): no extra write. Elections run on a
  // mutex of their own: a leader's record is its key's.
  holderMetadata: Object.freeze(['mutex', 'reentrant', 'fair', 'spin', 'read-write', 'semaphore'] as const),
});

const MUTEX: ExclusiveOptions = { reentrant: false, queues: true, staleWaiter: 'requeue', mode: '' };
const REENTRANT: ExclusiveOptions = { ...MUTEX, reentrant: true };
const SPIN: ExclusiveOptions = { ...REENTRANT, queues: false };
/** A candidate whose session ended while it campaigned is told (LockLostError), not requeued. */
const CANDIDATE: ExclusiveOptions = { ...MUTEX, staleWaiter: 'reject' };

/**
 * The etcd backend (issue 24): Go's concurrency package in the one lock API. One session (lease,
 * keep-alive) per client carries every key; a key's create revision orders its queue and is its
 * fencing token; waiters watch the key before their own. Offers every family but the counter
 * semaphore (see capabilities).
 */
export class EtcdBackend implements LockBackend {
  readonly name = 'etcd';
  readonly capabilities = ETCD_CAPABILITIES;
  readonly etcd: Etcd3;
  private readonly ownsEtcd: boolean;
  private readonly ctx: EtcdContext;
  private readonly ttlSeconds: number;
  private current: EtcdSession | undefined;
  private opening: Promise<EtcdSession> | undefined;
  private closed = false;

  constructor(
    options: EtcdLockClientOptions,
    private readonly host: BackendHost,
  ) {
    const keyPrefix = options.keyPrefix ?? 'ls';
    if (typeof keyPrefix !== 'string' || keyPrefix.length === 0) {
      throw new InvalidLockOptionError('keyPrefix', 'a non-empty string', keyPrefix);
    }
    this.ttlSeconds = validateTtl(options.sessionTtlSeconds ?? 30);
    const requestTimeoutMs = validateLeaseMs(options.requestTimeoutMs ?? 5_000, 'requestTimeoutMs');
    // Every option is checked before a connection is made: a refused option must not leak one.
    const { etcd, owned } = resolveEtcd(options);
    this.etcd = etcd;
    this.ownsEtcd = owned;
    this.ctx = {
      store: new EtcdStore(etcd, requestTimeoutMs, host.reportError, etcdAddress(options, etcd)),
      keyPrefix,
      owned: new OwnedKeys(),
      host,
      session: () => this.session(),
    };
  }

  /** The live session's lease id (decimal), if one is open: every key of this client's locks is on it. */
  get sessionLeaseId(): string | undefined {
    return this.current?.alive ? this.current.id : undefined;
  }

  mutex(name: string): LockResource {
    return this.exclusive(name, 'mutex', MUTEX);
  }

  reentrant(name: string): LockResource {
    return this.exclusive(name, 'reentrant', REENTRANT);
  }

  /** etcd's queue is in revision order, first come first served across all clients: the same queue. */
  fair(name: string): LockResource {
    return this.exclusive(name, 'fair', REENTRANT);
  }

  spin(name: string): LockResource {
    return this.exclusive(name, 'spin', SPIN);
  }

  readWrite(name: string): { read: LockResource; write: LockResource } {
    return readWriteResources(this.ctx, name);
  }

  semaphore(name: string, permits: number): LockResource {
    return new SemaphoreResource(this.ctx, name, permits);
  }

  latch(name: string): LatchResource {
    return new EtcdLatch(this.ctx, name);
  }

  /**
   * A term is a hold of a mutex in the elections' own queue (`<prefix>/<name>/election/`): its token
   * is the candidate's key's create revision (Go's `Election.Rev()`), it ends with the session, and a
   * campaign whose session ends while it waits fails with LockLostError. The leader is the first key.
   */
  election(name: string): Election {
    const resource = new ExclusiveResource(this.ctx, name, 'election', CANDIDATE);
    return new EtcdElection(name, this.host.lock(resource, 'mutex'), this.ctx, resource.dir);
  }

  async forceUnlock(made: LockResource | LatchResource): Promise<boolean> {
    if (made instanceof EtcdResource || made instanceof EtcdLatch) return made.clear();
    throw new InvalidLockOptionError('lock', 'a lock created by this client', made);
  }

  /**
   * Puts `value` at `key` only while the hold with `fencingToken` still holds: one transaction,
   * `If(CreateRevision(lock key) == token)` — etcd itself refuses the write of a holder whose key is
   * gone (its session expired while it was paused, a forceUnlock). False when refused, or when this
   * client has no hold with that token (released, or another client's).
   */
  async guardedPut(holder: { readonly fencingToken: number }, key: string, value: string): Promise<boolean> {
    if (typeof key !== 'string' || key.length === 0)
      throw new InvalidLockOptionError('key', 'a non-empty string', key);
    if (typeof value !== 'string') throw new InvalidLockOptionError('value', 'a string', value);
    const entry = this.ctx.owned.byFencingToken(holder.fencingToken);
    if (entry === undefined) return false;
    const reply = await this.ctx.store.txn(
      [cmp.createdAt(entry.key, entry.revision)],
      [op.put(key, value, undefined)],
    );
    return reply.succeeded;
  }

  checkServer(): Promise<ServerFinding[]> {
    return checkEtcdServer(this.etcd);
  }

  /** Ends the session (its lease revoked: every key goes at once) and closes an etcd client we made. */
  async close(): Promise<void> {
    this.closed = true;
    const opening = this.opening?.catch(() => undefined);
    const session = this.current ?? (await opening);
    this.current = undefined;
    if (session) {
      await session.close();
      // Holds still held are gone with the lease: their signals say so.
      this.host.sessionLost(session.endedWith ?? new EtcdSessionEndedError(session.id, 'closed'));
    }
    this.ctx.store.cancelWatches();
    if (this.ownsEtcd) this.etcd.close();
  }

  /** The live session, opened (once, whoever asks meanwhile) when there is none. */
  private session(): Promise<EtcdSession> {
    const current = this.current;
    if (current?.alive) return Promise.resolve(current);
    // An attempt still in flight at close() must not open a session nobody would end.
    if (this.closed) return Promise.reject(new Error('the etcd lock client is closed'));
    this.opening ??= EtcdSession.open(
      this.ctx.store,
      { ttlSeconds: this.ttlSeconds, keyPrefix: this.ctx.keyPrefix },
      this.host.reportError,
      (ended, error) => this.ended(ended, error),
    )
      .then((session) => (this.current = session))
      .finally(() => (this.opening = undefined));
    return this.opening;
  }

  /** Every hold the session carried is lost, at once; the next acquire opens a new session. */
  private ended(session: EtcdSession, error: EtcdSessionEndedError): void {
    if (this.current === session) this.current = undefined;
    this.host.events.emit('connectionError', error);
    this.host.sessionLost(error);
  }

  private exclusive(name: string, family: Family, options: ExclusiveOptions): LockResource {
    return new ExclusiveResource(this.ctx, name, family, options);
  }
}

function validateTtl(value: unknown): number {
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 1 || value > 86_400) {
    throw new InvalidLockOptionError(
      'sessionTtlSeconds',
      'an integer number of seconds from 1 to 86400',
      value,
    );
  }
  return value;
}

/** The methods of an Etcd3 the locks call: checked by shape (the user's copy of etcd3 may not be ours). */
function isEtcd3(value: unknown): value is Etcd3 {
  const etcd = value as Partial<Etcd3> | null;
  return (
    typeof etcd === 'object' &&
    etcd !== null &&
    typeof etcd.kv?.txn === 'function' &&
    typeof etcd.leaseClient?.leaseGrant === 'function' &&
    typeof etcd.watch === 'function'
  );
}

/** host:port of each endpoint (never credentials), for errors. */
function etcdAddress(options: EtcdLockClientOptions, etcd: Etcd3): string {
  const given = options.hosts ?? (etcd as unknown as { options?: { hosts?: unknown } }).options?.hosts;
  const list = (Array.isArray(given) ? given : [given]).filter((h): h is string => typeof h === 'string');
  const named = list.map((host) => {
    try {
      return new URL(host).host || host;
    } catch {
      return host.replace(/^.*@/, '');
    }
  });
  return named.length > 0 ? named.join(',') : "the etcd client's hosts";
}

function resolveEtcd(options: EtcdLockClientOptions): { etcd: Etcd3; owned: boolean } {
  const { hosts, etcd } = options;
  if (etcd !== undefined) {
    if (hosts !== undefined)
      throw new InvalidLockOptionError('hosts', 'left out when `etcd` is given', hosts);
    if (!isEtcd3(etcd))
      throw new InvalidLockOptionError('etcd', 'an Etcd3 client of the etcd3 package', etcd);
    return { etcd, owned: false };
  }
  const list = typeof hosts === 'string' ? [hosts] : hosts;
  if (
    !Array.isArray(list) ||
    list.length === 0 ||
    !list.every((h) => typeof h === 'string' && h.length > 0)
  ) {
    throw new InvalidLockOptionError(
      'hosts',
      'etcd URLs (a string or an array of strings), or `etcd`',
      hosts,
    );
  }
  return { etcd: new (etcd3().Etcd3)({ hosts: list }), owned: true };
}
