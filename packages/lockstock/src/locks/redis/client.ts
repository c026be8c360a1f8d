import { EventEmitter } from 'node:events';
import { resolveRedis, type RedisClient, type RedisSource } from '../../redis/connection.js';
import { assertKeyPrefix, DEFAULT_KEY_PREFIX } from '../../redis/keys.js';
import { ScriptRunner } from '../../redis/scripts.js';
import { SharedSubscriber } from '../../redis/subscriber.js';
import { InvalidLockOptionError, LockClientClosedError } from '../errors.js';
import { validateLeaseMs, validateWaitMs } from '../options.js';
import { newOwnerId } from '../owner.js';
import type { Lock, LockClientEvents, ReentrantLock } from '../types.js';
import { WaitQueues } from '../wait-queue.js';
import { Watchdog } from '../watchdog.js';
import type { LeaseHandle } from '../handle.js';
import type { GrantTicket } from './base.js';
import type { RedisLockContext } from './context.js';
import { RedisMutex } from './mutex.js';
import { RedisReentrantLock } from './reentrant.js';

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
   * Fairness bound, in ms: how long a contended lock may keep passing between waiters of this client
   * (one round trip per hand-off) before the client that has waited longest gets its turn. Larger
   * means more throughput under contention, smaller means shorter waits for other clients.
   * @default 50
   */
  localHandoffWindowMs?: number;
}

/**
 * Entry point of the Redis backend: creates locks, and owns what they share — the script runner,
 * one pub/sub connection for all waiters, the watchdog that renews leases, and the event channel
 * (`lost`, `renewalFailed`, `connectionError`).
 */
export class RedisLockClient extends EventEmitter<LockClientEvents> {
  readonly redis: RedisClient;
  private readonly ownsRedis: boolean;
  private readonly subscriber: SharedSubscriber;
  private readonly ctx: RedisLockContext;
  private closed = false;
  private readonly mutexes = new Map<string, RedisMutex>();
  private readonly reentrantLocks = new Map<string, RedisReentrantLock>();

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
    const { client, owned } = resolveRedis(options.redis);
    this.redis = client;
    this.ownsRedis = owned;
    this.subscriber = new SharedSubscriber(client, (error) => this.emit('connectionError', error));
    const clientId = newOwnerId();
    const turnWindowMs = 100;
    const queues = new WaitQueues<LeaseHandle, GrantTicket>(
      (channel, onRelease) => this.subscriber.subscribe(channel, onRelease),
      clientId,
      turnWindowMs,
      localHandoffWindowMs,
    );
    this.ctx = {
      client,
      scripts: new ScriptRunner(client),
      keyPrefix,
      clientId,
      turnWindowMs,
      watchdog: new Watchdog(watchdogTimeoutMs, {
        renewed: (handle) =>
          this.emit('renewed', { name: handle.name, owner: handle.owner, fencingToken: handle.fencingToken }),
        renewalFailed: (handle, error) =>
          this.emit('renewalFailed', { name: handle.name, owner: handle.owner, error }),
      }),
      queues,
      events: this,
      assertOpen: (name) => {
        if (this.closed) throw new LockClientClosedError(name);
      },
    };
  }

  /** A non-reentrant mutex named `name`. */
  mutex(name: string): Lock {
    return this.cached(this.mutexes, name, () => new RedisMutex(this.ctx, name));
  }

  /** A reentrant lock named `name` (re-entry per `run()` task or explicit owner). */
  reentrant(name: string): ReentrantLock {
    return this.cached(this.reentrantLocks, name, () => new RedisReentrantLock(this.ctx, name));
  }

  /**
   * Lock objects hold no state but their key names; reusing them spares the allocations of building
   * those names on every `mutex(name).acquire()`. The cache is simply dropped when it grows large.
   */
  private cached<L>(cache: Map<string, L>, name: string, create: () => L): L {
    let lock = cache.get(name);
    if (lock === undefined) {
      if (cache.size >= 4096) cache.clear();
      lock = create();
      cache.set(name, lock);
    }
    return lock;
  }

  /**
   * Stops renewals and closes the connections this client created. Release held locks first:
   * locks still held after close() are no longer renewed and expire at the end of their lease.
   */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.ctx.watchdog.stop();
    this.ctx.queues.close();
    await this.subscriber.close();
    if (this.ownsRedis) await this.redis.quit().catch(() => this.redis.disconnect());
  }
}
