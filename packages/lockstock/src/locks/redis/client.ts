import { EventEmitter } from 'node:events';
import { isCluster, resolveRedis, type RedisClient, type RedisSource } from '../../redis/connection.js';
import { assertKeyPrefix, DEFAULT_KEY_PREFIX } from '../../redis/keys.js';
import { ScriptRunner } from '../../redis/scripts.js';
import { SharedSubscriber } from '../../redis/subscriber.js';
import type { LockResource, Wake } from '../core/backend.js';
import { createLockCore, stopLockCore } from '../core/context.js';
import { KINDS } from '../core/kind.js';
import { CoreLock } from '../core/lock.js';
import { CoreReentrantLock, CoreSemaphore } from '../core/lock-variants.js';
import { MultiLock } from '../core/multi-lock.js';
import { InvalidLockOptionError } from '../errors.js';
import { validateLeaseMs, validatePermits, validateWaitMs } from '../options.js';
import { newOwnerId } from '../owner.js';
import type {
  CountDownLatch,
  Lock,
  LockClient,
  LockClientEvents,
  ReadWriteLock,
  ReentrantLock,
  Semaphore,
  SemaphoreOptions,
} from '../types.js';
import type { RedisLockContext } from './context.js';
import { ExclusiveResource } from './exclusive.js';
import { FairResource } from './fair.js';
import { RedisCountDownLatch } from './latch.js';
import { ReadResource, WriteResource } from './read-write.js';
import type { RedisResource } from './resource.js';
import { LOCK_SCRIPTS } from './scripts.js';
import { ReplicatedResource, type ReplicaAcks } from './replicated.js';
import { CounterSemaphoreResource, SemaphoreResource } from './semaphore.js';

export interface RedisLockClientOptions {
  /**
   * The Redis to use (Redis >= 7): an ioredis `Redis` or `Cluster` you own (close() leaves it open),
   * or a URL / ioredis options for a connection the client creates and closes.
   */
  redis: RedisSource;
  /**
   * Prefix of every key and channel; keys look like `<prefix>:{<lock name>}`.
   * @default 'ls'
   */
  keyPrefix?: string;
  /**
   * Lease of locks acquired without `leaseMs`; the watchdog renews them every third of it.
   * @default 30000
   */
  watchdogTimeoutMs?: number;
  /**
   * Fairness bound of mutexes and reentrant locks, in ms: how long a contended lock may keep passing
   * between waiters of this client (one round trip per hand-off) before the client that has waited
   * longest gets its turn. Larger means more throughput under contention, smaller shorter waits for
   * other clients.
   * @default 50
   */
  localHandoffWindowMs?: number;
  /**
   * How long a waiter of a fair lock keeps its place without trying again, and how long a waiting
   * writer keeps new readers out, in ms: a dead waiter delays the others by at most this much.
   * Live waiters try again every third of it.
   * @default 3000
   */
  waiterTimeoutMs?: number;
  /**
   * Replica acknowledgement (opt-in, standalone masters with replicas, e.g. under Sentinel): after a
   * lock is taken, `WAIT` for this many replicas within `timeoutMs`, else give it back and fail with
   * LockNotReplicatedError. Narrows the failover hazard; it does not make replication synchronous
   * (see ReplicatedResource). Not available on a Cluster client (WAIT cannot be routed there).
   * @default undefined (no waiting: a failover may lose a lock that was not replicated yet)
   */
  replicaAcks?: ReplicaAcks;
}

/** How long a released lock stays reserved for the client whose turn it is (client-turns.lua). */
const TURN_WINDOW_MS = 100;

/**
 * The Redis backend: creates locks of every kind, and owns what they share — the script runner, one
 * pub/sub connection for all waiters, the wait loop, the watchdog that renews leases, and the event
 * channel (`lost`, `renewed`, `renewalFailed`, `connectionError`).
 */
export class RedisLockClient extends EventEmitter<LockClientEvents> implements LockClient {
  readonly redis: RedisClient;
  private readonly ownsRedis: boolean;
  private readonly subscriber: SharedSubscriber;
  private readonly ctx: RedisLockContext;
  private closed = false;
  private readonly replicaAcks: ReplicaAcks | undefined;
  /**
   * Lock objects hold nothing but key names: cached (per kind, then by the caller's name string, whose
   * hash V8 keeps, so a lookup builds no string) to spare the allocations, dropped when large.
   */
  private readonly cache = new Map<string, Map<string, unknown>>();
  private cachedLocks = 0;
  /** The Redis resource behind each lock this client made (for forceUnlock). */
  private readonly resources = new WeakMap<object, RedisResource>();

  constructor(options: RedisLockClientOptions) {
    super();
    if (typeof options !== 'object' || options === null || options.redis === undefined) {
      throw new InvalidLockOptionError(
        'redis',
        'an ioredis client, a redis:// URL or ioredis options',
        undefined,
      );
    }
    const keyPrefix = options.keyPrefix ?? DEFAULT_KEY_PREFIX;
    assertKeyPrefix(keyPrefix);
    const watchdogTimeoutMs = validateLeaseMs(options.watchdogTimeoutMs ?? 30_000, 'watchdogTimeoutMs');
    const localHandoffWindowMs = validateWaitMs(options.localHandoffWindowMs ?? 50, 'localHandoffWindowMs');
    const waiterTimeoutMs = validateLeaseMs(options.waiterTimeoutMs ?? 3_000, 'waiterTimeoutMs');
    // Every option is checked before a connection is made: a refused option must not leak one.
    this.replicaAcks = validateReplicaAcks(options.replicaAcks);
    const { client, owned } = resolveRedis(options.redis);
    if (this.replicaAcks && isCluster(client)) {
      throw new InvalidLockOptionError(
        'replicaAcks',
        'left out with a Cluster client (WAIT cannot be routed)',
        true,
      );
    }
    this.redis = client;
    this.ownsRedis = owned;
    // A connection we made reports its errors here (an unreachable server must not be an unhandled
    // 'error' event); a client the caller owns keeps the caller's own handling.
    if (owned) client.on('error', (error: Error) => this.emit('connectionError', error));
    this.subscriber = new SharedSubscriber(client, (error) => this.emit('connectionError', error));
    const clientId = newOwnerId();
    const decode = (message: string): Wake => decodeWake(message, clientId);
    const core = createLockCore(this, {
      watchdogTimeoutMs,
      localHandoffWindowMs,
      subscribe: (channel, onWake) =>
        this.subscriber.subscribe(channel, (message) => onWake(decode(message))),
      isClosed: () => this.closed,
    });
    this.ctx = {
      client,
      scripts: new ScriptRunner(client),
      keyPrefix,
      clientId,
      turnWindowMs: TURN_WINDOW_MS,
      waiterTimeoutMs,
      core,
    };
  }

  /** A non-reentrant mutex: a fresh owner per acquire. */
  mutex(name: string): Lock {
    return this.cached('mutex', name, () => {
      const resource = ExclusiveResource.mutex(this.ctx, name);
      return this.track(new CoreLock(this.ctx.core, this.replicated(resource), KINDS.mutex), resource);
    });
  }

  /** A reentrant lock (re-entry per `run()` task or explicit owner). */
  reentrant(name: string): ReentrantLock {
    return this.cached('reentrant', name, () => {
      const resource = ExclusiveResource.reentrant(this.ctx, name);
      return this.track(
        new CoreReentrantLock(this.ctx.core, this.replicated(resource), KINDS.reentrant),
        resource,
      );
    });
  }

  /** A reentrant lock granted strictly in arrival order across all clients. */
  fair(name: string): ReentrantLock {
    return this.cached('fair', name, () => {
      const resource = new FairResource(this.ctx, name);
      return this.track(
        new CoreReentrantLock(this.ctx.core, this.replicated(resource), KINDS.fair),
        resource,
      );
    });
  }

  /** A reentrant lock whose waiters back off instead of subscribing (for very many locks). */
  spin(name: string): ReentrantLock {
    return this.cached('spin', name, () => {
      const resource = ExclusiveResource.spin(this.ctx, name);
      return this.track(
        new CoreReentrantLock(this.ctx.core, this.replicated(resource), KINDS.spin),
        resource,
      );
    });
  }

  readWrite(name: string): ReadWriteLock {
    return this.cached('read-write', name, () => {
      const read = new ReadResource(this.ctx, name);
      const write = new WriteResource(this.ctx, name);
      return {
        name,
        read: this.track(new CoreReentrantLock(this.ctx.core, this.replicated(read), KINDS.read), read),
        write: this.track(new CoreReentrantLock(this.ctx.core, this.replicated(write), KINDS.write), write),
      };
    });
  }

  /** Permits with leases: a crashed holder's permit comes back when its lease ends. */
  semaphore(name: string, options: SemaphoreOptions): Semaphore {
    const permits = validatePermits(options?.permits);
    return this.cached(`semaphore:${permits}`, name, () => {
      const resource = new SemaphoreResource(this.ctx, name, permits);
      return this.track(
        new CoreSemaphore(this.ctx.core, this.replicated(resource), KINDS.semaphore, permits),
        resource,
      );
    });
  }

  /** Permits counted without leases (Redisson's RSemaphore): a crashed holder's permit is lost. */
  counterSemaphore(name: string, options: SemaphoreOptions): Semaphore {
    const permits = validatePermits(options?.permits);
    return this.cached(`counter-semaphore:${permits}`, name, () => {
      const resource = new CounterSemaphoreResource(this.ctx, name, permits);
      return this.track(
        new CoreSemaphore(this.ctx.core, this.replicated(resource), KINDS.counterSemaphore, permits),
        resource,
      );
    });
  }

  countDownLatch(name: string): CountDownLatch {
    return this.cached('latch', name, () => {
      const latch = new RedisCountDownLatch(this.ctx, name);
      return this.track(latch, latch);
    });
  }

  /** All of `locks` or none; the locks may be of any kind and client (Redis Cluster: any slots). */
  multiLock(locks: readonly Lock[]): Lock {
    return new MultiLock(locks, this.ctx.core.reportError);
  }

  /**
   * Administrative release: deletes `lock`'s holders whoever they are and wakes its waiters (their
   * holders learn it on their next renewal: LockLostError 'expired'). True if anything was held.
   */
  async forceUnlock(lock: Lock | CountDownLatch): Promise<boolean> {
    if (lock instanceof MultiLock) {
      return (await Promise.all(lock.locks.map((part) => this.forceUnlock(part)))).some(Boolean);
    }
    const resource = this.resources.get(lock);
    if (!resource) throw new InvalidLockOptionError('lock', 'a lock created by this client', lock);
    this.ctx.core.assertOpen(lock.name);
    const keys = [
      resource.wakeChannel ?? `${this.ctx.keyPrefix}:{${lock.name}}:unlock`,
      ...resource.holderKeys,
    ];
    return (await this.ctx.scripts.run(LOCK_SCRIPTS.forceUnlock, keys, [])) === 1;
  }

  /**
   * Stops renewals and closes the connections this client created. Release held locks first:
   * locks still held after close() are no longer renewed and expire at the end of their lease.
   */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    stopLockCore(this.ctx.core);
    await this.subscriber.close();
    if (this.ownsRedis) await this.redis.quit().catch(() => this.redis.disconnect());
  }

  async [Symbol.asyncDispose](): Promise<void> {
    await this.close();
  }

  private cached<L>(kind: string, name: string, create: () => L): L {
    let byName = this.cache.get(kind);
    let lock = byName?.get(name) as L | undefined;
    if (lock === undefined) {
      if (this.cachedLocks >= 4096) {
        this.cache.clear(); // safe: per-hold state lives elsewhere
        this.cachedLocks = 0;
        byName = undefined;
      }
      if (byName === undefined) this.cache.set(kind, (byName = new Map()));
      lock = create();
      byName.set(name, lock);
      this.cachedLocks++;
    }
    return lock;
  }

  private track<L extends object>(lock: L, resource: RedisResource): L {
    this.resources.set(lock, resource);
    return lock;
  }

  /** The resource a lock runs on: with replica acknowledgement when asked for. */
  private replicated(resource: LockResource): LockResource {
    return this.replicaAcks ? new ReplicatedResource(resource, this.redis, this.replicaAcks) : resource;
  }
}

function validateReplicaAcks(acks: ReplicaAcks | undefined): ReplicaAcks | undefined {
  if (acks === undefined) return undefined;
  if (
    typeof acks !== 'object' ||
    acks === null ||
    !Number.isSafeInteger(acks.replicas) ||
    acks.replicas < 1
  ) {
    throw new InvalidLockOptionError('replicaAcks.replicas', 'a positive integer', acks?.replicas);
  }
  validateLeaseMs(acks.timeoutMs, 'replicaAcks.timeoutMs');
  return { replicas: acks.replicas, timeoutMs: acks.timeoutMs };
}

const ANY: Wake = Object.freeze({ to: 'any' });

/**
 * Wake-up messages of every lock channel: '' anyone may try; 't:<client>' a released lock is
 * reserved for that client's turn (the others hold back for the turn window); 'p:<client>' one permit
 * of a semaphore is reserved for that client's turn (the others try again when the window ends, in
 * case that client is gone, and meanwhile as they would); 'o:<owner>' only that waiter should try
 * (fair locks).
 */
function decodeWake(message: string, clientId: string): Wake {
  if (message.startsWith('o:')) return { to: 'owner', owner: message.slice(2) };
  if (message.startsWith('t:') && message.slice(2) !== clientId) return { to: 'defer', ms: TURN_WINDOW_MS };
  if (message.startsWith('p:') && message.slice(2) !== clientId) return { to: 'later', ms: TURN_WINDOW_MS };
  return ANY;
}
