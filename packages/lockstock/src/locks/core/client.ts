import { EventEmitter } from 'node:events';
import { InvalidLockOptionError, UnsupportedLockKindError } from '../errors.js';
import { validateLeaseMs, validatePermits } from '../options.js';
import type {
  CountDownLatch,
  Election,
  KindName,
  Lock,
  LockClient,
  LockClientEvents,
  ReadWriteLock,
  ReentrantLock,
  Semaphore,
  SemaphoreOptions,
} from '../types.js';
import type { LatchResource, LockResource } from './backend.js';
import { electionOverLock } from './election.js';
import { createLockCore, stopLockCore, type LockCore } from './context.js';
import { KINDS } from './kind.js';
import { CoreLatch } from './latch.js';
import { CoreLock } from './lock.js';
import { CoreReentrantLock, CoreSemaphore } from './lock-variants.js';
import { checkBackendSpi } from './spi-version.js';
import { MultiLock } from './multi-lock.js';
import { ServerGate } from './server-gate.js';
import { withLockDelay } from './lock-delay.js';
import type { ServerChecksMode, ServerReport } from '../server-checks.js';
import type { LockBackend, LockFamily, OpenBackend } from './spi.js';

/**
 * Options every lock client takes (each backend's client options extend them): the watchdog's lease
 * and the fairness bound of local hand-off.
 */
export interface LockClientOptions {
  /**
   * Lease of locks acquired without `leaseMs` on a backend whose holds have leases; the watchdog
   * renews them every third of it.
   * @default 30000
   */
  watchdogTimeoutMs?: number;
  /**
   * Capture the stack of every acquire, reported with the hold's loss (`acquiredAt` of the `lost`
   * event — above all an 'abandoned' one: where the leaked handle came from). It costs a few µs
   * per acquire, so it is off unless asked for here or by `LOCKSTOCK_ACQUIRE_STACKS=1`.
   * @default false (true when the environment variable LOCKSTOCK_ACQUIRE_STACKS is 1)
   */
  acquireStacks?: boolean;
  /**
   * The check of the server at the first acquire (see ServerChecksMode): 'warn' emits `serverWarning`
   * for each setting that weakens the locks (an eviction policy, no persistence, a pooler...),
   * 'strict' refuses acquires with UnsafeServerError while one would allow a double grant.
   * @default 'warn'
   */
  serverChecks?: ServerChecksMode;
  /**
   * Lock-delay, ms (Chubby's; Consul's LockDelay): after an unclean end — a holder that stopped
   * renewing (crashed, paused, cut off) — the lock stays refused this much longer than its holder
   * trusted it, so a paused ex-holder's late writes land before the next holder starts. The store
   * decides it (its lease runs this much longer than the holder's); a release frees the lock at once
   * as always. Backends whose holds have leases only (Redis, Redlock, local); refused on session
   * backends. See DelayedResource.
   * @default 0
   */
  lockDelayMs?: number;
}

/** The KINDS entry of each kind name. */
const KIND_KEYS = {
  mutex: 'mutex',
  reentrant: 'reentrant',
  fair: 'fair',
  read: 'read',
  write: 'write',
  semaphore: 'semaphore',
  'counter-semaphore': 'counterSemaphore',
  spin: 'spin',
} as const satisfies Record<KindName, keyof typeof KINDS>;

/** Lock objects cached per client before the cache is dropped (they hold only names). */
const CACHE_LIMIT = 4096;

/**
 * The one lock client of every backend: it owns the cache and the factories, the wait loop, the
 * watchdog and the events; the backend makes resources. Each backend's client (RedisLockClient,
 * ZooKeeperLockClient...) is a thin shell that opens its backend. A family the backend does not offer
 * is refused by its factory with UnsupportedLockKindError.
 */
export class LockClientBase<B extends LockBackend = LockBackend>
  extends EventEmitter<LockClientEvents>
  implements LockClient
{
  readonly backend: B;
  protected readonly core: LockCore;
  private closed = false;
  private readonly lockDelayMs: number;
  /**
   * Lock objects hold nothing but names: cached (per family, then by the caller's name string, whose
   * hash V8 keeps, so a lookup builds no string) to spare the allocations, dropped when large.
   */
  private readonly cache = new Map<string, Map<string, unknown>>();
  private cachedLocks = 0;
  /** What the backend made behind each lock object (for forceUnlock). */
  private readonly made = new WeakMap<object, LockResource | LatchResource>();

  constructor(open: OpenBackend<B>, options: LockClientOptions = {}) {
    super();
    const watchdogTimeoutMs = validateLeaseMs(options.watchdogTimeoutMs ?? 30_000, 'watchdogTimeoutMs');
    this.core = createLockCore(this, {
      watchdogTimeoutMs,
      acquireStacks: options.acquireStacks ?? process.env.LOCKSTOCK_ACQUIRE_STACKS === '1',
      // Asked only once waiters wait, long after the backend below is open.
      subscribe: (channel, onWake) => {
        const subscribe = this.backend.subscribe;
        if (!subscribe) return Promise.resolve(() => undefined);
        return subscribe(channel, onWake);
      },
      isClosed: () => this.closed,
      backendName: () => this.backend.name,
      holderFamilies: () => this.backend.capabilities.holderMetadata,
    });
    const core = this.core;
    this.backend = open({
      events: core.events,
      reportError: core.reportError,
      assertOpen: core.assertOpen,
      sessionLost: core.sessionLost,
      lock: (resource, kind) => new CoreLock(core, resource, KINDS[KIND_KEYS[kind]]),
    });
    const lockDelayMs = options.lockDelayMs ?? 0;
    if (lockDelayMs !== 0) validateLeaseMs(lockDelayMs, 'lockDelayMs');
    const serverChecks = options.serverChecks ?? 'warn';
    if (!['warn', 'strict', 'off'].includes(serverChecks)) {
      throw new InvalidLockOptionError('serverChecks', "'warn', 'strict' or 'off'", serverChecks);
    }
    try {
      checkBackendSpi(this.backend);
    } catch (error) {
      // Refused before any lock: close what the backend may have opened, and the core.
      this.closed = true;
      stopLockCore(core);
      Promise.resolve()
        .then(() => this.backend.close())
        .catch((failure: unknown) => core.reportError(failure));
      throw error;
    }
    if (lockDelayMs > 0 && this.backend.capabilities.leases === 'session') {
      void this.close().catch((failure: unknown) => core.reportError(failure));
      throw new InvalidLockOptionError(
        'lockDelayMs',
        `left out on ${this.backend.name}: its holds end with its session, which the store ends at once (lock-delay needs leases)`,
        lockDelayMs,
      );
    }
    this.lockDelayMs = lockDelayMs;
    const check = this.backend.checkServer ? () => this.checkServer() : undefined;
    core.serverGate = new ServerGate(serverChecks, check, this);
  }

  /**
   * Checks the server the locks depend on now (what `lockstock doctor` prints): every finding,
   * `info` ones included; none from a backend that has no checks. Rejects when the server cannot be
   * asked.
   */
  async checkServer(): Promise<ServerReport> {
    const findings = (await this.backend.checkServer?.()) ?? [];
    return { backend: this.backend.name, findings };
  }

  /** A non-reentrant mutex: a fresh owner per acquire. */
  mutex(name: string): Lock {
    return this.cached('mutex', name, (backend) => {
      const resource = this.offered('mutex', name, backend.mutex?.bind(backend))(name);
      return this.track(new CoreLock(this.core, this.delayed(resource), KINDS.mutex), resource);
    });
  }

  /** A reentrant lock (re-entry per `run()` task or explicit owner). */
  reentrant(name: string): ReentrantLock {
    return this.cached('reentrant', name, (backend) => {
      const resource = this.offered('reentrant', name, backend.reentrant?.bind(backend))(name);
      return this.track(new CoreReentrantLock(this.core, this.delayed(resource), KINDS.reentrant), resource);
    });
  }

  /** A reentrant lock granted strictly in arrival order across all clients. */
  fair(name: string): ReentrantLock {
    return this.cached('fair', name, (backend) => {
      const resource = this.offered('fair', name, backend.fair?.bind(backend))(name);
      return this.track(new CoreReentrantLock(this.core, this.delayed(resource), KINDS.fair), resource);
    });
  }

  /** A reentrant lock whose waiters back off instead of subscribing (for very many locks). */
  spin(name: string): ReentrantLock {
    return this.cached('spin', name, (backend) => {
      const resource = this.offered('spin', name, backend.spin?.bind(backend))(name);
      return this.track(new CoreReentrantLock(this.core, this.delayed(resource), KINDS.spin), resource);
    });
  }

  /**
   * A read-write lock: many readers or one writer, both sides reentrant (see ReadWriteLock). Refused
   * with UnsupportedLockKindError where the backend has none.
   */
  readWrite(name: string): ReadWriteLock {
    return this.cached('read-write', name, (backend) => {
      const { read, write } = this.offered('read-write', name, backend.readWrite?.bind(backend))(name);
      return {
        name,
        read: this.track(new CoreReentrantLock(this.core, this.delayed(read), KINDS.read), read),
        write: this.track(new CoreReentrantLock(this.core, this.delayed(write), KINDS.write), write),
      };
    });
  }

  /** Permits with leases: a crashed holder's permit comes back when its lease ends. */
  semaphore(name: string, options: SemaphoreOptions): Semaphore {
    const permits = validatePermits(options?.permits);
    return this.cached(`semaphore:${permits}`, name, (backend) => {
      const resource = this.offered('semaphore', name, backend.semaphore?.bind(backend))(name, permits);
      return this.track(
        new CoreSemaphore(this.core, this.delayed(resource), KINDS.semaphore, permits),
        resource,
      );
    });
  }

  /** Permits counted without leases (Redisson's RSemaphore): a crashed holder's permit is lost. */
  counterSemaphore(name: string, options: SemaphoreOptions): Semaphore {
    const permits = validatePermits(options?.permits);
    return this.cached(`counter-semaphore:${permits}`, name, (backend) => {
      const make = this.offered('counter-semaphore', name, backend.counterSemaphore?.bind(backend));
      const resource = make(name, permits);
      return this.track(
        new CoreSemaphore(this.core, this.delayed(resource), KINDS.counterSemaphore, permits),
        resource,
      );
    });
  }

  /**
   * A count-down latch: waiters are released when its count reaches zero (see CountDownLatch).
   * Refused with UnsupportedLockKindError where the backend has none.
   */
  countDownLatch(name: string): CountDownLatch {
    return this.cached('latch', name, (backend) => {
      const resource = this.offered('latch', name, backend.latch?.bind(backend))(name);
      return this.track(new CoreLatch(this.core, resource), resource);
    });
  }

  /**
   * Leader election: one leader per term, a fencing token per term, terms lost with the session. On
   * a backend without an `election` factory, the election runs on its mutex (or else fair) lock
   * named `election:<name>`, when that lock's resource answers `readHolder()` (see electionOverLock).
   */
  election(name: string): Election {
    return this.cached('election', name, (backend) => {
      if (!backend.election && backend.capabilities.unsupported.election === undefined) {
        const lockName = `election:${name}`;
        for (const family of ['mutex', 'fair'] as const) {
          const resource = backend[family]?.(lockName);
          if (resource?.readHolder) {
            const lock = new CoreLock(this.core, resource, KINDS[family]);
            return electionOverLock(name, lock, resource as Required<Pick<LockResource, 'readHolder'>>);
          }
        }
      }
      return this.offered('election', name, backend.election?.bind(backend))(name);
    });
  }

  /** All of `locks` or none; the locks may be of any kind, client and backend. */
  multiLock(locks: readonly Lock[]): Lock {
    return new MultiLock(locks, this.core.reportError);
  }

  /**
   * Administrative release: deletes `lock`'s holders whoever they are and wakes its waiters (their
   * holders learn it on their next renewal, or at once where the backend watches: LockLostError). True
   * if anything was held.
   */
  async forceUnlock(lock: Lock | CountDownLatch): Promise<boolean> {
    if (lock instanceof MultiLock) {
      return (await Promise.all(lock.locks.map((part) => this.forceUnlock(part)))).some(Boolean);
    }
    const made = this.made.get(lock);
    if (!made) throw new InvalidLockOptionError('lock', 'a lock created by this client', lock);
    this.core.assertOpen(lock.name);
    return this.backend.forceUnlock(made);
  }

  /**
   * Stops renewals and closes what the backend opened. Release held locks first: a hold the watchdog
   * renewed or the session carried is lost at close() (its signal aborts with LockLostError, reason
   * 'client_closed'; the store ends it with its lease, or at once with the session); a hold with an
   * explicit `leaseMs` keeps it until it ends.
   */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    stopLockCore(this.core);
    await this.backend.close();
  }

  /** `close()`, for `await using client = new ...LockClient(...)`. */
  async [Symbol.asyncDispose](): Promise<void> {
    await this.close();
  }

  /** The resource a lock runs on: the backend's, with the lock-delay if one is set. */
  private delayed(resource: LockResource): LockResource {
    return withLockDelay(resource, this.lockDelayMs);
  }

  /** The backend's factory for `family`, or UnsupportedLockKindError with the backend's reason. */
  private offered<F>(family: LockFamily, name: string, factory: F | undefined): F {
    if (factory !== undefined) return factory;
    const reason =
      this.backend.capabilities.unsupported[family] ??
      (family === 'election'
        ? 'no election factory, and neither its mutex nor its fair lock answers readHolder()'
        : 'not implemented by this backend');
    throw new UnsupportedLockKindError(name, family, this.backend.name, reason);
  }

  private cached<L>(family: string, name: string, create: (backend: B) => L): L {
    let byName = this.cache.get(family);
    let lock = byName?.get(name) as L | undefined;
    if (lock === undefined) {
      if (this.cachedLocks >= CACHE_LIMIT) {
        this.cache.clear(); // safe: per-hold state lives elsewhere
        this.cachedLocks = 0;
        byName = undefined;
      }
      lock = create(this.backend);
      if (byName === undefined) this.cache.set(family, (byName = new Map()));
      byName.set(name, lock);
      this.cachedLocks++;
    }
    return lock;
  }

  private track<L extends object>(lock: L, made: LockResource | LatchResource): L {
    this.made.set(lock, made);
    return lock;
  }
}
