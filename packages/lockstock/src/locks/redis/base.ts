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

/** What a release needs to hand the lock directly to a waiting caller of this client. */
export interface GrantTicket {
  readonly owner: string;
  readonly leaseMs: number;
  readonly renewed: boolean;
}

/** The three scripts that define a lock type; the rest of the behaviour is shared. */
export interface LockScripts {
  /** KEYS: lock, fence, queue. ARGV: owner, lease ms, client id, waiting (1/0). Returns token or {pttl}. */
  readonly acquire: LuaScript;
  /**
   * KEYS: lock, fence, channel, queue. ARGV: owner, release mode, client id, turn ms, next owner,
   * next lease ms. Returns {token} when handed to the next owner, else a release code (codes.ts).
   */
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
  /** Live handles per owner, this process: an owner re-entering must not queue behind waiters for it. */
  private readonly liveHolds = new Map<string, number>();

  protected constructor(
    protected readonly ctx: RedisLockContext,
    readonly name: string,
    private readonly scripts: LockScripts,
  ) {
    assertKeyName('Lock', name);
    this.keys = lockKeys(ctx.keyPrefix, name);
    const { lock, fence, channel, queue } = this.keys;
    this.acquireKeys = [lock, fence, queue];
    this.releaseKeys = [lock, fence, channel, queue];
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
    // Fast path: nobody of ours is queued (or the caller will not wait), so try right away. An owner
    // that already holds the lock (a reentrant hold) tries first too: queueing behind waiters that
    // wait for its own release would deadlock.
    const reentering = this.liveHolds.has(owner);
    if (waitMs === 0 || reentering || !this.ctx.queues.hasWaiters(this.keys.channel)) {
      const first = await this.attempt(owner, leaseMs, renewed, 0);
      if (!(first instanceof Busy)) return first;
      if (waitMs === 0) return undefined;
    }
    const deadline = waitMs === Infinity ? Infinity : startedAt + waitMs;
    const attempt = () => this.attempt(owner, leaseMs, renewed, 1);
    const ticket: GrantTicket = { owner, leaseMs, renewed };
    return this.ctx.queues.wait(this.keys.channel, this.name, ticket, attempt, deadline, signal, {
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
    if (typeof reply === 'number') return this.newHandle(owner, reply, leaseMs, renewed, requestedAt);
    const pttl = Array.isArray(reply) ? Number(reply[0]) : NaN;
    return new Busy(pttl >= 0 ? pttl : undefined);
  }

  private newHandle(owner: string, token: number, leaseMs: number, renewed: boolean, requestedAt: number) {
    const handle = new LeaseHandle(this.name, owner, token, leaseMs, renewed, requestedAt, this);
    this.liveHolds.set(owner, (this.liveHolds.get(owner) ?? 0) + 1);
    if (renewed) this.ctx.watchdog.add(handle);
    return handle;
  }

  // LeaseBackend: what handles call back into.

  async release(handle: LeaseHandle): Promise<ReleaseOutcome> {
    const { queues, clientId, turnWindowMs, scripts } = this.ctx;
    const channel = this.keys.channel;
    const handOff = queues.claimHandOff(channel);
    if (!handOff) {
      const args = [handle.owner, 'notify', clientId, turnWindowMs, '', 0];
      return releaseOutcome(await scripts.run(this.scripts.release, this.releaseKeys, args));
    }
    // A local waiter queues: the release script hands it the lock (one round trip, no message).
    const next = handOff.ticket;
    const args = [handle.owner, handOff.mode, clientId, turnWindowMs, next.owner, next.leaseMs];
    const requestedAt = monotonicNow();
    const reply = await scripts.run(this.scripts.release, this.releaseKeys, args);
    if (Array.isArray(reply)) {
      const granted = this.newHandle(next.owner, Number(reply[0]), next.leaseMs, next.renewed, requestedAt);
      if (!queues.granted(channel, handOff, granted)) {
        granted.release().catch((error: unknown) => this.reportError(error)); // the waiter gave up meanwhile
      }
      return 'released';
    }
    const outcome = releaseOutcome(reply);
    if (outcome === 'expired' || outcome === 'not_owner') queues.notGranted(channel); // not ours to give
    return outcome;
  }

  async extend(handle: LeaseHandle, leaseMs: number): Promise<ExtendStatus> {
    return extendStatus(
      await this.ctx.scripts.run(this.scripts.extend, this.extendKeys, [handle.owner, leaseMs]),
    );
  }

  detach(handle: LeaseHandle): void {
    const holds = (this.liveHolds.get(handle.owner) ?? 0) - 1;
    if (holds > 0) this.liveHolds.set(handle.owner, holds);
    else this.liveHolds.delete(handle.owner);
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
