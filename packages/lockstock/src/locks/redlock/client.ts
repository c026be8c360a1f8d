import { EventEmitter } from 'node:events';
import { resolveRedis, type RedisSource } from '../../redis/connection.js';
import { assertKeyName, assertKeyPrefix, DEFAULT_KEY_PREFIX } from '../../redis/keys.js';
import { ScriptRunner } from '../../redis/scripts.js';
import { createLockCore, stopLockCore, type LockCore } from '../core/context.js';
import { KINDS } from '../core/kind.js';
import { CoreLock } from '../core/lock.js';
import { InvalidLockOptionError } from '../errors.js';
import { validateLeaseMs } from '../options.js';
import type { Lock, LockClientEvents } from '../types.js';
import { RedlockResource, type RedlockNode } from './resource.js';
import type { FencingTokenSource } from './token-source.js';

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

/**
 * Redlock over N independent Redis masters: a mutex held while a majority (N/2+1) agree, with the
 * validity of the Redis spec on the monotonic clock, release everywhere, majority extends (a holder
 * that cannot reach a majority learns on its next extend that the lock is lost), and fencing tokens
 * from an external source. It shares the lock core with every other kind: the same handles, run(),
 * watchdog, signals and events. Safe only under bounded pauses and clock drift (see the README).
 */
export class RedlockClient extends EventEmitter<LockClientEvents> {
  private readonly nodes: readonly RedlockNode[];
  private readonly owned: readonly RedlockNode[];
  private readonly core: LockCore;
  private readonly keyPrefix: string;
  private readonly fencing: FencingTokenSource | undefined;
  private readonly nodeTimeoutMs: number;
  private closed = false;

  constructor(options: RedlockClientOptions) {
    super();
    if (!Array.isArray(options?.nodes) || options.nodes.length === 0) {
      throw new InvalidLockOptionError('nodes', 'a non-empty array of Redis masters', options?.nodes);
    }
    this.keyPrefix = options.keyPrefix ?? DEFAULT_KEY_PREFIX;
    assertKeyPrefix(this.keyPrefix);
    this.fencing = options.fencing;
    this.nodeTimeoutMs = validateLeaseMs(options.nodeTimeoutMs ?? 50, 'nodeTimeoutMs');
    const resolved = options.nodes.map((source, i) => {
      const { client, owned } = resolveRedis(source);
      client.on('error', (error: Error) => this.emit('connectionError', error));
      return { node: { label: nodeLabel(source, i), client, scripts: new ScriptRunner(client) }, owned };
    });
    this.nodes = resolved.map((r) => r.node);
    this.owned = resolved.filter((r) => r.owned).map((r) => r.node);
    this.core = createLockCore(this, {
      watchdogTimeoutMs: validateLeaseMs(options.watchdogTimeoutMs ?? 30_000, 'watchdogTimeoutMs'),
      localHandoffWindowMs: 0,
      subscribe: () => Promise.resolve(() => undefined), // never asked: Redlock waiters back off
      isClosed: () => this.closed,
    });
  }

  /** A mutex on a majority of the masters. */
  mutex(name: string): Lock {
    assertKeyName('Lock', name);
    return new CoreLock(
      this.core,
      new RedlockResource(this.nodes, name, this.keyPrefix, this.fencing, this.nodeTimeoutMs),
      KINDS.redlock,
    );
  }

  /** Administrative release: deletes `lock` on every master whoever holds it. True if any had it. */
  async forceUnlock(lock: Lock): Promise<boolean> {
    const key = `${this.keyPrefix}:{${lock.name}}:redlock`;
    const deleted = await Promise.all(this.nodes.map((node) => node.client.del(key).catch(() => 0)));
    return deleted.some((n) => n > 0);
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    stopLockCore(this.core);
    await Promise.all(this.owned.map((node) => node.client.quit().catch(() => node.client.disconnect())));
  }

  async [Symbol.asyncDispose](): Promise<void> {
    await this.close();
  }
}

function nodeLabel(source: RedisSource, index: number): string {
  if (typeof source === 'string') return source.replace(/\/\/[^@/]*@/, '//');
  return `node ${index + 1}`;
}
