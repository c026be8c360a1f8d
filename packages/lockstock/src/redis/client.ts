import {
  explainConnectionErrors,
  explainingClient,
  isCluster,
  resolveRedis,
  type RedisClient,
  type RedisSource,
} from './connection.js';
import { assertKeyPrefix, DEFAULT_KEY_PREFIX } from './keys.js';
import { ScriptRunner } from './scripts.js';
import { SharedSubscriber } from './subscriber.js';
import {
  LockClientBase,
  LockElection,
  newOwnerId,
  proclaimedValue,
  validateLeaseMs,
  validateWaitMs,
  type BackendCapabilities,
  type BackendHost,
  type LockBackend,
  type LockClientOptions,
  type LatchResource,
  type LockResource,
  type SubscribeWakes,
} from '../backend/index.js';
import { InvalidLockOptionError } from '../locks/errors.js';
import type { Election, Leader } from '../locks/types.js';
import { lockBase, type RedisLockContext } from './context.js';
import { ExclusiveResource } from './exclusive.js';
import { FairResource } from './fair.js';
import { RedisLatch } from './latch.js';
import { ReadResource, WriteResource } from './read-write.js';
import type { RedisResource } from './resource.js';
import { LOCK_SCRIPTS } from './lock-scripts.js';
import { ReplicatedResource, type ReplicaAcks } from './replicated.js';
import { CounterSemaphoreResource, SemaphoreResource } from './semaphore.js';
import { ClientTurns } from './turns.js';
import { checkRedisServers } from './server-checks.js';
import type { ServerFinding } from '../locks/server-checks.js';

export interface RedisLockClientOptions extends LockClientOptions {
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
  /**
   * Keep each hold's holder metadata in Redis — host, pid, the acquire's `label`, its trace id and
   * since when — so `inspect().heldBy` names who holds a lock of any kind but the counter semaphore,
   * and since when (off: `heldBy` names the owner only, or the record another client with this option
   * on stored). It costs the hot path: a mutex or a semaphore permit writes a second key per acquire
   * and deletes it per release; a reentrant, spin, fair or read-write lock a longer value in the write
   * it makes anyway; a mutex measured at about 1.2× the client CPU and 1.2× Redis's per uncontended
   * acquire-release pair (README, "What the instrumentation costs"). The other
   * backends keep it where they write anyway (a znode's data, an etcd value, memory): always on.
   * @default false
   */
  holderMetadata?: boolean;
}

/** How long a released lock stays reserved for the client whose turn it is (client-turns.lua). */
const TURN_WINDOW_MS = 100;

const REDIS_CAPABILITIES: BackendCapabilities = Object.freeze({
  leases: 'renewable',
  fencing: 'counter',
  wakeUps: 'push',
  unsupported: Object.freeze({}),
});

/** With the `holderMetadata` option. Elections run on a mutex: their leader's record is its holder's. */
const REDIS_CAPABILITIES_WITH_HOLDERS: BackendCapabilities = Object.freeze({
  ...REDIS_CAPABILITIES,
  // Not the counter semaphore: its permits are one integer, with no holder to keep a record for.
  holderMetadata: Object.freeze(['mutex', 'reentrant', 'spin', 'fair', 'read-write', 'semaphore'] as const),
});

/**
 * The Redis backend: one Lua script per step, keys of one lock on one slot (`{name}`), wake-ups on one
 * shared pub/sub connection, and the cohort protocol (a release hands the lock to a waiter of the same
 * client; clients with waiters take turns: client-turns.lua). Offers every family.
 */
export class RedisBackend implements LockBackend {
  readonly name = 'redis';
  readonly capabilities: BackendCapabilities;
  readonly redis: RedisClient;
  readonly subscribe: SubscribeWakes;
  private readonly ownsRedis: boolean;
  private readonly subscriber: SharedSubscriber;
  private readonly ctx: RedisLockContext;
  private readonly replicaAcks: ReplicaAcks | undefined;
  private readonly host: BackendHost;
  /** The Redis resource behind each resource handed out (replica acknowledgement wraps them). */
  private readonly resources = new WeakMap<object, RedisResource>();

  constructor(options: RedisLockClientOptions, host: BackendHost) {
    this.host = host;
    const holderMetadata = validateHolderMetadata(options.holderMetadata);
    this.capabilities = holderMetadata ? REDIS_CAPABILITIES_WITH_HOLDERS : REDIS_CAPABILITIES;
    const keyPrefix = options.keyPrefix ?? DEFAULT_KEY_PREFIX;
    assertKeyPrefix(keyPrefix);
    const waiterTimeoutMs = validateLeaseMs(options.waiterTimeoutMs ?? 3_000, 'waiterTimeoutMs');
    const localHandoffWindowMs = validateWaitMs(options.localHandoffWindowMs ?? 50, 'localHandoffWindowMs');
    // Every option is checked before a connection is made: a refused option must not leak one.
    this.replicaAcks = validateReplicaAcks(options.replicaAcks);
    const { client, owned } = resolveRedis(options.redis);
    if (this.replicaAcks && isCluster(client)) {
      if (owned) client.disconnect();
      throw new InvalidLockOptionError(
        'replicaAcks',
        'left out with a Cluster client (WAIT cannot be routed)',
        true,
      );
    }
    this.redis = client;
    this.ownsRedis = owned;
    // A connection we made reports its errors to the client (an unreachable server must not be an
    // unhandled 'error' event); a client the caller owns keeps the caller's own handling.
    if (owned) client.on('error', (error: Error) => host.events.emit('connectionError', error));
    this.subscriber = new SharedSubscriber(client, (error) => host.events.emit('connectionError', error));
    const clientId = newOwnerId();
    const turns = new ClientTurns(clientId, TURN_WINDOW_MS, localHandoffWindowMs);
    this.subscribe = turns.subscribeWith(this.subscriber);
    // A command that fails for want of a connection names the server and why (LockConnectionError).
    const explainError = explainConnectionErrors(client, owned);
    this.ctx = {
      client: explainingClient(client, explainError),
      scripts: new ScriptRunner(client, { explainError }),
      keyPrefix,
      clientId,
      turnWindowMs: TURN_WINDOW_MS,
      turns,
      waiterTimeoutMs,
      holderMetadata,
      core: host,
    };
  }

  mutex(name: string): LockResource {
    return this.track(ExclusiveResource.mutex(this.ctx, name));
  }

  reentrant(name: string): LockResource {
    return this.track(ExclusiveResource.reentrant(this.ctx, name));
  }

  fair(name: string): LockResource {
    return this.track(new FairResource(this.ctx, name));
  }

  spin(name: string): LockResource {
    return this.track(ExclusiveResource.spin(this.ctx, name));
  }

  readWrite(name: string): { read: LockResource; write: LockResource } {
    return {
      read: this.track(new ReadResource(this.ctx, name)),
      write: this.track(new WriteResource(this.ctx, name)),
    };
  }

  semaphore(name: string, permits: number): LockResource {
    return this.track(new SemaphoreResource(this.ctx, name, permits));
  }

  counterSemaphore(name: string, permits: number): LockResource {
    return this.track(new CounterSemaphoreResource(this.ctx, name, permits));
  }

  /**
   * Terms are holds of a mutex in the elections' own key space (`<prefix>:election:{name}`), renewed
   * by the watchdog: a leader that cannot renew loses its term (its signal aborts) when its lease can
   * no longer be trusted. Observers check every interval (no notification of a new leader).
   */
  election(name: string): Election {
    const ctx = { ...this.ctx, keyPrefix: `${this.ctx.keyPrefix}:election` };
    const resource = ExclusiveResource.mutex(ctx, name);
    const keys = [lockBase(ctx, name), `${lockBase(ctx, name)}:fence`]; // see ExclusiveResource
    const readLeader = async (): Promise<Leader | undefined> => {
      const reply = await this.ctx.scripts.run(LOCK_SCRIPTS.electionLeader, keys, []);
      if (!Array.isArray(reply)) return undefined;
      const value = proclaimedValue(String(reply[0]));
      return value === undefined ? undefined : { value, fencingToken: Number(reply[1]) };
    };
    return new LockElection(name, this.host.lock(this.track(resource), 'mutex'), readLeader);
  }

  latch(name: string): LatchResource {
    const latch = new RedisLatch(this.ctx, name);
    this.resources.set(latch, latch);
    return latch;
  }

  async forceUnlock(made: LockResource | LatchResource): Promise<boolean> {
    const resource = this.resources.get(made);
    if (!resource) throw new InvalidLockOptionError('lock', 'a lock created by this client', made);
    const keys = [
      resource.wakeChannel ?? `${this.ctx.keyPrefix}:{${resource.name}}:unlock`,
      ...resource.holderKeys,
    ];
    return (await this.ctx.scripts.run(LOCK_SCRIPTS.forceUnlock, keys, [])) === 1;
  }

  checkServer(): Promise<ServerFinding[]> {
    return checkRedisServers(this.redis, this.replicaAcks);
  }

  async close(): Promise<void> {
    await this.subscriber.close();
    if (this.ownsRedis) await this.redis.quit().catch(() => this.redis.disconnect());
  }

  /** The resource a lock runs on (with replica acknowledgement when asked for), remembered. */
  private track(resource: RedisResource & LockResource): LockResource {
    const used = this.replicaAcks ? new ReplicatedResource(resource, this.redis, this.replicaAcks) : resource;
    this.resources.set(used, resource);
    return used;
  }
}

/**
 * Locks of every kind on Redis (single, Cluster, Sentinel), owning what they share — the script
 * runner, one pub/sub connection for all waiters, the wait loop, the watchdog that renews leases, and
 * the event channel (`lost`, `renewed`, `renewalFailed`, `connectionError`). A thin shell over the
 * generic client and the Redis backend.
 */
export class RedisLockClient extends LockClientBase<RedisBackend> {
  constructor(options: RedisLockClientOptions) {
    if (typeof options !== 'object' || options === null || options.redis === undefined) {
      throw new InvalidLockOptionError(
        'redis',
        'an ioredis client, a redis:// URL or ioredis options',
        undefined,
      );
    }
    super((host) => new RedisBackend(options, host), options);
  }

  /** The ioredis connection the locks run on. */
  get redis(): RedisClient {
    return this.backend.redis;
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

function validateHolderMetadata(value: unknown): boolean {
  if (value === undefined) return false;
  if (typeof value !== 'boolean') throw new InvalidLockOptionError('holderMetadata', 'true or false', value);
  return value;
}
