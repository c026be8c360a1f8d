import { assertKeyName, lockKeys, type LockKeys } from '../../redis/keys.js';
import type { LuaScript } from '../../redis/scripts.js';
import { LockAbortedError, LockTimeoutError, type LockLostError } from '../errors.js';
import { LeaseHandle, monotonicNow, type ExtendStatus, type LeaseBackend } from '../handle.js';
import { resolveAcquireOptions, type ResolvedAcquireOptions } from '../options.js';
import { runLocked } from '../run.js';
import type {
  AcquireOptions,
  CriticalSection,
  Lock,
  LockHandle,
  ReleaseOutcome,
  RunOptions,
} from '../types.js';
import { Busy, type Attempt } from '../wait-queue.js';
import { extendStatus, releaseOutcome } from './codes.js';
import type { RedisLockContext } from './context.js';
import { forceUnlockScript } from './scripts.js';

/** The three scripts that define a lock type; the rest of the behaviour is shared. */
export interface LockScripts {
  /** KEYS: lock, fence, queue. ARGV: owner, lease ms, client id, waiting (1/0). Returns token or {pttl}. */
  readonly acquire: LuaScript;
  /** KEYS: lock, channel, queue. ARGV: owner, release mode, client id, turn ms. Returns a release code. */
  readonly release: LuaScript;
  /** KEYS: lock. ARGV: owner, lease ms. Returns an extend code (see codes.ts). */
  readonly extend: LuaScript;
}

/**
 * A lock on Redis: acquisition (fast path, then FIFO waiting woken by pub/sub), handles with
 * watchdog renewal, fencing tokens and owner-checked release. Subclasses choose the scripts and
 * who the default owner is.
 */
export abstract class RedisLock implements Lock, LeaseBackend {
  protected readonly keys: LockKeys;
  private readonly acquireKeys: readonly string[];
  private readonly releaseKeys: readonly string[];
  private readonly extendKeys: readonly string[];
  private readonly forceUnlockKeys: readonly string[];

  protected constructor(
    protected readonly ctx: RedisLockContext,
    readonly name: string,
    private readonly scripts: LockScripts,
  ) {
    assertKeyName('Lock', name);
    this.keys = lockKeys(ctx.keyPrefix, name);
    const { lock, fence, channel, queue } = this.keys;
    this.acquireKeys = [lock, fence, queue];
    this.releaseKeys = [lock, channel, queue];
    this.extendKeys = [lock];
    this.forceUnlockKeys = [lock, channel];
  }

  /** The owner used when the caller does not name one. */
  protected abstract defaultOwner(): string;

  async acquire(options?: AcquireOptions): Promise<LockHandle> {
    const resolved = resolveAcquireOptions(options, Infinity);
    const handle = await this.acquireWith(resolved);
    if (handle) return handle;
    throw new LockTimeoutError(this.name, resolved.waitMs);
  }

  async tryAcquire(options?: AcquireOptions): Promise<LockHandle | undefined> {
    return this.acquireWith(resolveAcquireOptions(options, 0));
  }

  run<T>(fn: CriticalSection<T>, options?: RunOptions): Promise<T> {
    return runLocked(
      (o) => this.acquire(o),
      fn,
      options,
      (error) => this.reportError(error),
    );
  }

  async isLocked(): Promise<boolean> {
    this.ctx.assertOpen(this.name);
    return (await this.ctx.client.exists(this.keys.lock)) === 1;
  }

  async remainingTtl(): Promise<number | undefined> {
    this.ctx.assertOpen(this.name);
    const pttl = await this.ctx.client.pttl(this.keys.lock);
    if (pttl === -2) return undefined;
    return pttl === -1 ? Infinity : pttl;
  }

  async forceUnlock(): Promise<boolean> {
    this.ctx.assertOpen(this.name);
    return (await this.ctx.scripts.run(forceUnlockScript, this.forceUnlockKeys, [])) === 1;
  }

  private async acquireWith(options: ResolvedAcquireOptions): Promise<LeaseHandle | undefined> {
    this.ctx.assertOpen(this.name);
    const { signal, waitMs } = options;
    if (signal?.aborted) throw new LockAbortedError(this.name, signal.reason);
    const startedAt = monotonicNow();
    const owner = options.owner ?? this.defaultOwner();
    const renewed = options.leaseMs === undefined;
    const leaseMs = options.leaseMs ?? this.ctx.watchdog.timeoutMs;
    // Fast path: nobody of ours is queued (or the caller will not wait), so try right away.
    if (waitMs === 0 || !this.ctx.queues.hasWaiters(this.keys.channel)) {
      const first = await this.attempt(owner, leaseMs, renewed, 0);
      if (!(first instanceof Busy)) return first;
      if (waitMs === 0) return undefined;
    }
    const deadline = waitMs === Infinity ? Infinity : startedAt + waitMs;
    const attempt = () => this.attempt(owner, leaseMs, renewed, 1);
    return this.ctx.queues.wait(this.keys.channel, this.name, attempt, deadline, signal, {
      abandon: (handle) => void handle.release().catch((error: unknown) => this.reportError(error)),
      heldUntil: (handle) => handle.validUntil,
      idle: () => {
        this.ctx.client
          .zrem(this.keys.queue, this.ctx.clientId)
          .catch((error: unknown) => this.reportError(error));
      },
    });
  }

  /** One acquire script call; `waiting` (1) keeps this client in the lock's queue if it fails. */
  private async attempt(
    owner: string,
    leaseMs: number,
    renewed: boolean,
    waiting: 0 | 1,
  ): Promise<Attempt<LeaseHandle>> {
    const requestedAt = monotonicNow();
    const args = [owner, leaseMs, this.ctx.clientId, waiting];
    const reply = await this.ctx.scripts.run(this.scripts.acquire, this.acquireKeys, args);
    if (typeof reply === 'number') {
      const handle = new LeaseHandle(this.name, owner, reply, leaseMs, renewed, requestedAt, this);
      if (renewed) this.ctx.watchdog.add(handle);
      return handle;
    }
    const pttl = Array.isArray(reply) ? Number(reply[0]) : NaN;
    return new Busy(pttl >= 0 ? pttl : undefined);
  }

  // LeaseBackend: what handles call back into.

  async release(handle: LeaseHandle): Promise<ReleaseOutcome> {
    // With a local waiter queued, its attempt follows the release on the same connection.
    const { queues, clientId, turnWindowMs } = this.ctx;
    const mode = queues.claimHandOff(this.keys.channel);
    const args = [handle.owner, mode, clientId, turnWindowMs];
    if (mode === 'notify') {
      return releaseOutcome(await this.ctx.scripts.run(this.scripts.release, this.releaseKeys, args));
    }
    const follow = () => queues.followRelease(this.keys.channel);
    // If Redis had lost the script, the release ran after the waiter's attempt: let it try again.
    const reply = this.ctx.scripts.run(this.scripts.release, this.releaseKeys, args, follow);
    follow();
    return releaseOutcome(await reply);
  }

  async extend(handle: LeaseHandle, leaseMs: number): Promise<ExtendStatus> {
    return extendStatus(
      await this.ctx.scripts.run(this.scripts.extend, this.extendKeys, [handle.owner, leaseMs]),
    );
  }

  detach(handle: LeaseHandle): void {
    if (handle.renewed) this.ctx.watchdog.delete(handle);
  }

  lost(handle: LeaseHandle, error: LockLostError): void {
    this.ctx.events.emit('lost', {
      name: this.name,
      owner: handle.owner,
      fencingToken: handle.fencingToken,
      reason: error.reason,
      error,
    });
  }

  private reportError(error: unknown): void {
    this.ctx.events.emit('connectionError', error instanceof Error ? error : new Error(String(error)));
  }
}
