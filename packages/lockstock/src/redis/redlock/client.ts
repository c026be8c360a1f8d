import { resolveRedis, type RedisSource } from '../connection.js';
import { assertKeyName, assertKeyPrefix, DEFAULT_KEY_PREFIX } from '../keys.js';
import { ScriptRunner } from '../scripts.js';
import {
  LockClientBase,
  validateLeaseMs,
  type BackendCapabilities,
  type BackendHost,
  type LockBackend,
  type LatchResource,
  type LockResource,
} from '../../backend/index.js';
import { InvalidLockOptionError } from '../../locks/errors.js';
import { RedlockResource, type RedlockNode } from './resource.js';
import type { FencingTokenSource } from './token-source.js';

/**
 * Options of a RedlockClient: the independent masters a lock needs a majority of, where fencing
 * tokens come from, and the timings of leases and votes.
 */
export interface RedlockClientOptions {
  /**
   * The independent masters (no replication between them): ioredis clients you own, or URLs /
   * options for connections the client creates and closes. An odd number, usually 5.
   */
  nodes: readonly RedisSource[];
  /**
   * Where fencing tokens come from (see FencingTokenSource: the masters cannot supply them). Without
   * one, every hold's fencingToken is 0 and the lock is for efficiency only: it cannot protect a
   * resource against a holder that paused past its lease.
   */
  fencing?: FencingTokenSource;
  /** @default 'ls' */
  keyPrefix?: string;
  /**
   * Lease of locks acquired without `leaseMs`; the watchdog extends it on a majority every third.
   * @default 30000
   */
  watchdogTimeoutMs?: number;
  /**
   * How long one master may take to answer, in ms, before its vote counts as an error: small next to
   * the lease (the Redis spec suggests 5–50 ms for 10 s), so a hung master cannot stall a vote.
   * @default 50
   */
  nodeTimeoutMs?: number;
}

/** Why Redlock offers the mutex only: each family's reason, given by its factory. */
const NOT_ON_A_QUORUM = {
  reentrant:
    're-entry would need the hold counts of independent masters to agree, and a master that lost its copy (a restart without persistence) would silently reset them: use mutex() with one owner',
  fair: 'a queue order cannot be agreed by majority votes without a consensus protocol: use a ZooKeeper or etcd client for a fair lock',
  spin: 'its waiters already back off without wake-ups: use mutex()',
  'read-write':
    'shared holds counted on independent masters do not bound writers and readers together under a majority vote: use a single-Redis, ZooKeeper or etcd client',
  semaphore:
    'permits counted on independent masters only bound holders to about twice the permits under a majority vote (each master admits its own N)',
  'counter-semaphore':
    'permits counted on independent masters only bound holders to about twice the permits under a majority vote',
  latch: 'a count decremented on independent masters diverges when a master misses a decrement',
  election:
    'a leader is read from one master at a time, and masters disagree after a restart without persistence: use a single-Redis, ZooKeeper or etcd client',
} as const;

const REDLOCK_CAPABILITIES: BackendCapabilities = Object.freeze({
  leases: 'renewable',
  fencing: 'external',
  wakeUps: 'backoff',
  unsupported: Object.freeze(NOT_ON_A_QUORUM),
});

/**
 * Redlock over N independent Redis masters: a mutex held while a majority (N/2+1) agree, with the
 * validity of the Redis spec on the monotonic clock, release everywhere, majority extends (a holder
 * that cannot reach a majority learns on its next extend that the lock is lost), and fencing tokens
 * from an external source. Waiters back off: there is no channel all masters share.
 */
export class RedlockBackend implements LockBackend {
  readonly name = 'redlock';
  readonly capabilities = REDLOCK_CAPABILITIES;
  readonly nodes: readonly RedlockNode[];
  private readonly owned: readonly RedlockNode[];
  private readonly keyPrefix: string;
  private readonly fencing: FencingTokenSource | undefined;
  private readonly nodeTimeoutMs: number;

  constructor(options: RedlockClientOptions, host: BackendHost) {
    this.keyPrefix = options.keyPrefix ?? DEFAULT_KEY_PREFIX;
    assertKeyPrefix(this.keyPrefix);
    this.fencing = options.fencing;
    this.nodeTimeoutMs = validateLeaseMs(options.nodeTimeoutMs ?? 50, 'nodeTimeoutMs');
    const resolved = options.nodes.map((source, i) => {
      const { client, owned } = resolveRedis(source);
      client.on('error', (error: Error) => host.events.emit('connectionError', error));
      return { node: { label: nodeLabel(source, i), client, scripts: new ScriptRunner(client) }, owned };
    });
    this.nodes = resolved.map((r) => r.node);
    this.owned = resolved.filter((r) => r.owned).map((r) => r.node);
  }

  mutex(name: string): LockResource {
    assertKeyName('Lock', name);
    return new RedlockResource(this.nodes, name, this.keyPrefix, this.fencing, this.nodeTimeoutMs);
  }

  async forceUnlock(made: LockResource | LatchResource): Promise<boolean> {
    const key = `${this.keyPrefix}:{${made.name}}:redlock`;
    const deleted = await Promise.all(this.nodes.map((node) => node.client.del(key).catch(() => 0)));
    return deleted.some((n) => n > 0);
  }

  async close(): Promise<void> {
    await Promise.all(this.owned.map((node) => node.client.quit().catch(() => node.client.disconnect())));
  }
}

/**
 * Redlock over N independent Redis masters (see RedlockBackend), sharing the lock core with every
 * other backend: the same handles, run(), watchdog, signals and events. It offers the mutex; every
 * other family's factory throws UnsupportedLockKindError saying why a majority vote cannot honestly
 * offer it. Safe only under bounded pauses and clock drift (see the README).
 */
export class RedlockClient extends LockClientBase<RedlockBackend> {
  constructor(options: RedlockClientOptions) {
    if (!Array.isArray(options?.nodes) || options.nodes.length === 0) {
      throw new InvalidLockOptionError('nodes', 'a non-empty array of Redis masters', options?.nodes);
    }
    super((host) => new RedlockBackend(options, host), options);
  }
}

function nodeLabel(source: RedisSource, index: number): string {
  if (typeof source === 'string') return source.replace(/\/\/[^@/]*@/, '//');
  return `node ${index + 1}`;
}
