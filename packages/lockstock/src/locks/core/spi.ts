/**
 * The client-level half of the backend SPI (`lockstock/backend`): what a backend offers a lock client.
 * A backend makes one resource per lock (core/backend.ts), delivers wake-ups, and may keep a session
 * that carries every hold of the client (ZooKeeper's session, an etcd lease, a database connection)
 * and report its loss. The generic client (core/client.ts) owns everything else: the cache of lock
 * objects, the factories, the wait loop, the watchdog, handles, signals and events.
 */
import type { Election, KindName, Lock } from '../types.js';
import type { LatchResource, LockResource, SubscribeWakes } from './backend.js';
import type { LockCore } from './context.js';
import type { LockFamily } from './family.js';
import type { ServerFinding } from '../server-checks.js';

export { LOCK_FAMILIES, type LockFamily } from './family.js';

/**
 * What a backend's locks can promise, for reports and for the core: how holds end, where fencing
 * tokens come from, how waiters learn a lock is free, and which families it does not offer and why.
 */
export interface BackendCapabilities {
  /**
   * How holds end without a release: 'renewable' leases the watchdog renews (Redis), or 'session'
   * (the backend's session carries every hold and reports its loss: ZooKeeper, etcd, SQL).
   */
  readonly leases: 'renewable' | 'session';
  /**
   * Where fencing tokens come from: 'native' (the store's own order: a znode's czxid, a key's create
   * revision), 'counter' (a counter the backend keeps beside each lock), 'external' (a token source
   * the user configures, e.g. Redlock's), 'none' (tokens are 0: efficiency locks only).
   */
  readonly fencing: 'native' | 'counter' | 'external' | 'none';
  /** How waiters learn a lock is free: pushed wake-ups, watches, or polling with backoff. */
  readonly wakeUps: 'push' | 'watch' | 'backoff';
  /** Each family this backend does not offer, with the reason its factory will give. */
  readonly unsupported: Readonly<Partial<Record<LockFamily, string>>>;
  /**
   * The families whose locks store the holder metadata of their attempts (AttemptRequest.holder)
   * and report it in `inspect().heldBy`; for the others heldBy is undefined.
   * @default [] (none)
   */
  readonly holderMetadata?: readonly LockFamily[];
}

/**
 * What the client gives its backend: its events (`connectionError`), where background failures go,
 * the closed check, a lock of the core over a resource of the backend's (to build on, as an election
 * builds on a mutex), and
 * `sessionLost` — call it when the session that carries the holds ends or cannot be trusted: every
 * hold without a lease of its own is lost at once (its signal aborts, reason 'session_lost').
 */
export interface BackendHost extends Pick<LockCore, 'events' | 'reportError' | 'assertOpen' | 'sessionLost'> {
  /** A lock with the whole API (waiting, watchdog, signals) over `resource`, as a `kind` lock. */
  lock(resource: LockResource, kind: KindName): Lock;
}

/**
 * A lock backend for one client. Factories of unsupported families are left out (and named in
 * `capabilities.unsupported`). Every lock object the client hands out is cached by (family, name),
 * so a factory runs once per lock and its resource must be stateless between calls (see LockResource).
 */
export interface LockBackend {
  /** Shown in errors and reports: 'redis', 'redlock', 'zookeeper', 'etcd', 'postgres', 'local'... */
  readonly name: string;
  /**
   * The SPI version the backend was written for (`SPI_VERSION` of the lockstock it was built
   * against). A client refuses another with IncompatibleBackendError. Left out, the client checks the
   * backend's shape instead (SPI 1 declared no version).
   */
  readonly spiVersion?: number;
  readonly capabilities: BackendCapabilities;
  /** Wake-up delivery for resources that name a `wakeChannel`; resolves once subscribed. */
  readonly subscribe?: SubscribeWakes;

  /**
   * Checks the server the locks depend on (`lockstock doctor`, and every client's first acquire:
   * LockClientOptions.serverChecks): settings under which a lock may be granted twice, a fencing token
   * go backwards, or a guarantee be weaker than it looks, with `info` findings naming the server. A
   * backend without it is not checked. It may be called while locks are in use: read-only commands.
   */
  checkServer?(): Promise<readonly ServerFinding[]>;

  /** The resource of a non-reentrant mutex: one holder, any other owner is refused. */
  mutex?(name: string): LockResource;
  /** The resource of a reentrant lock: the holding owner's attempts add holds (`holdCount`). */
  reentrant?(name: string): LockResource;
  /**
   * The resource of a fair lock: reentrant, and granted in arrival order across all clients (the
   * backend queues the waiters, or its refusals tell the core the order).
   */
  fair?(name: string): LockResource;
  /** The resource of a spin lock: reentrant, with no wake-ups (`wakeChannel` undefined): waiters back off. */
  spin?(name: string): LockResource;
  /**
   * The two sides of a read-write lock over one store entry: `read` shared, `write` exclusive, both
   * reentrant, with the same `waitKey`. A backend whose read holder would wait for itself on the write
   * side refuses that attempt with LockUpgradeError (the kind's `upgradeRefused`).
   */
  readWrite?(name: string): { readonly read: LockResource; readonly write: LockResource };
  /**
   * The resource of a semaphore of `permits` permits, each held with a lease (or the session). The
   * first attempt stores the count; an attempt with another count fails with PermitsMismatchError.
   */
  semaphore?(name: string, permits: number): LockResource;
  /** The resource of a counter semaphore: `permits` permits counted without leases (lost with a crash). */
  counterSemaphore?(name: string, permits: number): LockResource;
  /**
   * The store's part of a count-down latch (see LatchResource): the count and its wake-up; the core
   * waits. (SPI 1 had `countDownLatch`, returning the whole latch, wait loop included.)
   */
  latch?(name: string): LatchResource;
  /** An election whose terms end with this client's leases or session (see Election). */
  election?(name: string): Election;

  /**
   * Administrative release of what one factory made (a resource, or a latch): deletes every holder
   * whoever it is (a latch's count) and wakes the waiters. True if anything was held (counting).
   */
  forceUnlock(made: LockResource | LatchResource): Promise<boolean>;
  /** Closes what the backend opened (sessions end: their holds go with them). */
  close(): Promise<void>;
}

/** Opens a backend for a client: called once, from the client's constructor, with its core. */
export type OpenBackend<B extends LockBackend = LockBackend> = (host: BackendHost) => B;
