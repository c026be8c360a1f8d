import type { LockLostError } from '../errors.js';
import type { LockHandle, ReleaseOptions, ReleaseOutcome } from '../types.js';
import { budgetChannel, holdChannel, lostChannel, releaseChannel, renewChannel } from './diagnostics.js';
import type { Hold } from './hold.js';

/**
 * What the caller holds: a thin face over the Hold the core keeps. Everything the core keeps (the
 * watchdog's schedule, the session's holds, the lease and budget timers, a grant's `lost` watch)
 * points at the Hold, never at this object, so a handle the program drops while holding becomes
 * garbage although its hold is alive — and the registry below then ends the hold as 'abandoned':
 * nothing renews it any more (DistributedLock's promise: an abandoned handle never holds for ever).
 * The Hold refers back to its handle only weakly (`handleRef`, for the diagnostics messages).
 */
export class HoldHandle implements LockHandle {
  constructor(readonly hold: Hold) {}

  get name(): string {
    return this.hold.name;
  }

  get owner(): string {
    return this.hold.owner;
  }

  get fencingToken(): number {
    return this.hold.fencingToken;
  }

  get leaseMs(): number | undefined {
    return this.hold.leaseMs;
  }

  get renewed(): boolean {
    return this.hold.renewed;
  }

  get signal(): AbortSignal {
    return this.hold.signal;
  }

  get lostError(): LockLostError | undefined {
    return this.hold.lostError;
  }

  extend(leaseMs?: number): Promise<void> {
    return this.hold.extend(leaseMs);
  }

  release(options?: ReleaseOptions): Promise<ReleaseOutcome> {
    return this.hold.release(options);
  }

  onLost(listener: (error: LockLostError) => void): () => void {
    return this.hold.onLost(listener);
  }

  stopRenewal(): void {
    this.hold.stopRenewal();
  }

  [Symbol.asyncDispose](): Promise<void> {
    return this.hold.release().then(() => undefined);
  }
}

/**
 * Its held value is the Hold (which does not reference the handle), never the handle itself: a
 * registry holding its target strongly would keep every handle alive and never call back. The
 * callback runs for released holds too (nothing to unregister on the hot path); `abandon` ignores
 * a hold that already ended.
 */
const collected = new FinalizationRegistry<Hold>((hold) => hold.abandon());

/** The caller's handle of a new hold, watched for being dropped while held. */
export function handleOf(hold: Hold): HoldHandle {
  const handle = new HoldHandle(hold);
  // Only for the messages, so only while someone listens: a WeakRef keeps its target alive until
  // the microtask queue drains, which a loop of acquires that never leaves it would pile up.
  if (observingHolds()) hold.handleRef = new WeakRef(handle);
  collected.register(handle, hold);
  return handle;
}

/** The caller's stack at `entry` (frames from `entry` up left out); formatted only when read. */
export function stackAt(entry: (...args: never[]) => unknown): { stack?: string } {
  const at: { stack?: string } = {};
  Error.captureStackTrace(at, entry);
  return at;
}

/** Whether any channel of a hold's messages has subscribers (the acquire's names the handle itself). */
function observingHolds(): boolean {
  return (
    holdChannel.hasSubscribers ||
    releaseChannel.hasSubscribers ||
    renewChannel.hasSubscribers ||
    lostChannel.hasSubscribers ||
    budgetChannel.hasSubscribers
  );
}
