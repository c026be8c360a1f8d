import {
  InvalidLockOptionError,
  LockTimeoutError,
  MultiLockReleaseError,
  type LockLostError,
} from '../errors.js';
import { resolveAcquireOptions, type ResolvedAcquireOptions } from '../options.js';
import { runLocked } from '../run.js';
import type {
  AcquireOptions,
  CriticalSection,
  Lock,
  LockHandle,
  LockInfo,
  MultiLockHandle,
  ReleaseOptions,
  ReleaseOutcome,
  RunOptions,
} from '../types.js';
import { monotonicNow } from './lease.js';

/**
 * All of several locks or none (Redisson's RedissonMultiLock), for any kinds and backends: each part
 * is acquired in name order — so two multi-locks over the same locks cannot deadlock — within one
 * shared deadline; if one part cannot be had, the parts already taken are released. On Redis Cluster
 * the parts may live on different slots: each is its own atomic lock.
 *
 * A release releases every part, whichever fail (see releaseAll): a part whose server is gone must
 * not keep the others held. The handle's `release()` then rejects with MultiLockReleaseError naming
 * the failed parts; when the give-back after a failed acquire fails, the acquire's own outcome
 * (undefined, LockTimeoutError, the part's error) stands and the MultiLockReleaseError goes to the
 * client's `connectionError` event.
 */
export class MultiLock implements Lock {
  readonly name: string;
  /** The parts, in the order they are acquired (by name). */
  readonly locks: readonly Lock[];

  constructor(
    locks: readonly Lock[],
    private readonly reportError: (error: unknown) => void,
  ) {
    if (!Array.isArray(locks) || locks.length === 0) {
      throw new InvalidLockOptionError('locks', 'a non-empty array of locks', locks);
    }
    if (new Set(locks).size !== locks.length) {
      throw new InvalidLockOptionError(
        'locks',
        'distinct locks (the same lock twice would wait for itself)',
        locks,
      );
    }
    this.locks = [...locks].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
    this.name = this.locks.map((lock) => lock.name).join('+');
  }

  async acquire(options?: AcquireOptions): Promise<MultiLockHandle> {
    const resolved = resolveAcquireOptions(options, Infinity);
    const handle = await this.acquireAll(resolved);
    if (handle) return handle;
    throw new LockTimeoutError(this.name, resolved.waitMs);
  }

  tryAcquire(options?: AcquireOptions): Promise<MultiLockHandle | undefined> {
    return this.acquireAll(resolveAcquireOptions(options, 0));
  }

  run<T>(fn: CriticalSection<T>, options?: RunOptions): Promise<T> {
    return runLocked((o) => this.acquire(o), fn, options, this.reportError);
  }

  async isLocked(): Promise<boolean> {
    return (await this.inspect()).held;
  }

  /** Held when any part is held; holders and remaining lease of the most occupied part. */
  async inspect(): Promise<LockInfo> {
    const parts = await Promise.all(this.locks.map((lock) => lock.inspect()));
    const held = parts.filter((part) => part.held);
    return {
      held: held.length > 0,
      holders: Math.max(0, ...parts.map((part) => part.holders)),
      remainingMs:
        held.length > 0 ? Math.min(...held.map((part) => part.remainingMs ?? Infinity)) : undefined,
    };
  }

  /** A multi-lock's parts each have their own token: adopt the parts, then build nothing here. */
  adopt(): Promise<LockHandle> {
    return Promise.reject(
      new InvalidLockOptionError('lock', 'one lock: adopt each part of a multi-lock on its own', this.name),
    );
  }

  private async acquireAll(options: ResolvedAcquireOptions): Promise<MultiLockHandle | undefined> {
    const deadline = options.waitMs === Infinity ? Infinity : monotonicNow() + options.waitMs;
    const parts: LockHandle[] = [];
    try {
      for (const lock of this.locks) {
        const waitMs = deadline === Infinity ? Infinity : Math.max(0, deadline - monotonicNow());
        const part = await lock.tryAcquire({
          waitMs,
          ...(options.leaseMs === undefined ? {} : { leaseMs: options.leaseMs }),
          ...(options.signal === undefined ? {} : { signal: options.signal }),
          ...(options.owner === undefined ? {} : { owner: options.owner }),
          ...(options.budget === undefined
            ? {}
            : { holdBudgetMs: options.budget.ms, onBudget: options.budget.action }),
          ...(options.label === undefined ? {} : { label: options.label }),
        });
        if (!part) {
          await releaseAll(this.name, parts).catch(this.reportError);
          return undefined;
        }
        parts.push(part);
      }
    } catch (error) {
      await releaseAll(this.name, parts).catch(this.reportError);
      throw error;
    }
    return new MultiHandle(this.name, parts);
  }
}

/**
 * Releases every part at once and waits for all: one that fails (its server gone) or hangs must not
 * keep the others held — a ZooKeeper part would stay held for its whole session (Redisson releases
 * the parts concurrently too; Curator's InterProcessMultiLock releases each and throws afterwards).
 * Says the first outcome, latest part first, that was not 'released'; throws one
 * MultiLockReleaseError with every failure if any part failed.
 */
async function releaseAll(
  name: string,
  parts: readonly LockHandle[],
  options?: ReleaseOptions,
): Promise<ReleaseOutcome> {
  // An async callback: a part that throws instead of rejecting (a Lock of the caller's) is settled too.
  const settled = await Promise.allSettled(parts.map(async (part) => part.release(options)));
  let outcome: ReleaseOutcome = 'released';
  for (const result of [...settled].reverse()) {
    if (result.status === 'fulfilled' && outcome === 'released') outcome = result.value;
  }
  const failed = parts.flatMap((part, i) => {
    const result = settled[i] as PromiseSettledResult<ReleaseOutcome>;
    return result.status === 'rejected' ? [{ name: part.name, error: result.reason as unknown }] : [];
  });
  if (failed.length > 0) {
    throw new MultiLockReleaseError(
      name,
      failed.map((failure) => failure.name),
      failed.map((failure) => failure.error),
      parts.length,
    );
  }
  return outcome;
}

class MultiHandle implements MultiLockHandle {
  readonly owner: string;
  readonly fencingToken: number;
  readonly signal: AbortSignal;
  private releasing: Promise<ReleaseOutcome> | undefined;

  constructor(
    readonly name: string,
    readonly parts: readonly LockHandle[],
  ) {
    const first = parts[0] as LockHandle;
    this.owner = first.owner;
    this.fencingToken = first.fencingToken;
    this.signal = AbortSignal.any(parts.map((part) => part.signal));
  }

  get leaseMs(): number | undefined {
    const leases = this.parts.flatMap((part) => (part.leaseMs === undefined ? [] : [part.leaseMs]));
    return leases.length === 0 ? undefined : Math.min(...leases);
  }

  get renewed(): boolean {
    return this.parts.every((part) => part.renewed);
  }

  get lostError(): LockLostError | undefined {
    return this.parts.find((part) => part.lostError)?.lostError;
  }

  async extend(leaseMs?: number): Promise<void> {
    await Promise.all(this.parts.map((part) => part.extend(leaseMs)));
  }

  /** Once, on the first part found lost. */
  onLost(listener: (error: LockLostError) => void): () => void {
    let called = false;
    const once = (error: LockLostError) => {
      if (called) return;
      called = true;
      stop();
      listener(error);
    };
    const removers = this.parts.map((part) => part.onLost(once));
    const stop = () => removers.forEach((remove) => remove());
    return stop;
  }

  stopRenewal(): void {
    for (const part of this.parts) part.stopRenewal();
  }

  /** Releases every part; rejects with MultiLockReleaseError if any failed (the others are free). */
  release(options?: ReleaseOptions): Promise<ReleaseOutcome> {
    this.releasing ??= releaseAll(this.name, this.parts, options);
    return this.releasing;
  }

  async [Symbol.asyncDispose](): Promise<void> {
    await this.release();
  }
}
