/**
 * What a CoreLock publishes (core/diagnostics.ts's channels): the acquire TracingChannel around each
 * acquire, and a message for each hand-off. Apart from the lock's acquire and release so that they
 * read as the lock's own work: the lock asks `tracingAcquires()` / `observingHandoffs()` — one
 * `hasSubscribers` check per event, and no message, closure or timestamp when nobody listens — and
 * calls here only when someone does.
 */
import { LockAbortedError, LockClientClosedError, LockTimeoutError } from '../errors.js';
import type { ResolvedAcquireOptions } from '../options.js';
import {
  acquireChannel,
  handoffChannel,
  type AcquireMessage,
  type AcquireOutcome,
  type HandoffMessage,
} from './diagnostics.js';
import type { HoldHandle } from './handle.js';
import type { LockKind } from './kind.js';
import { monotonicNow } from './lease.js';

/** What the messages name of the lock. */
export interface DiagnosedLock {
  readonly name: string;
  readonly kind: LockKind;
  readonly backendName: string;
}

/** Whether anyone listens to acquires (the only cost of the acquire channel otherwise). */
export function tracingAcquires(): boolean {
  return acquireChannel.hasSubscribers;
}

/** Whether anyone listens to hand-offs (the only cost of the hand-off channel otherwise). */
export function observingHandoffs(): boolean {
  return handoffChannel.hasSubscribers;
}

/** How a failed acquire ended, for the diagnostics. */
function acquireOutcomeOf(error: unknown): AcquireOutcome {
  if (error instanceof LockTimeoutError) return 'timeout';
  if (error instanceof LockAbortedError) return 'aborted';
  if (error instanceof LockClientClosedError) return 'closed';
  return 'error';
}

/**
 * Runs `acquire` inside the acquire TracingChannel: the wait (from the call to the grant or the
 * failure) is published as start/end/asyncStart/asyncEnd/error, with one context object. `owner` is
 * the one the acquire will use (chosen before, so that the start names it).
 */
export function traceAcquire<H extends HoldHandle | undefined>(
  lock: DiagnosedLock,
  owner: string,
  options: ResolvedAcquireOptions,
  acquire: () => Promise<H>,
): Promise<H> {
  const message: AcquireMessage = {
    name: lock.name,
    kind: lock.kind.name,
    backend: lock.backendName,
    owner,
    waitLimitMs: options.waitMs,
  };
  const startedAt = monotonicNow();
  return acquireChannel.tracePromise(async () => {
    // A start subscriber (lockstock/otel) may have named the acquire's trace: the hold records it.
    options.traceId ??= message.traceId;
    try {
      const hold = await acquire();
      message.waitMs = monotonicNow() - startedAt;
      if (hold === undefined) message.outcome = options.waitMs === 0 ? 'busy' : 'timeout';
      else {
        message.outcome = 'acquired';
        message.fencingToken = hold.fencingToken;
        message.handle = hold;
      }
      return hold;
    } catch (error) {
      message.waitMs = monotonicNow() - startedAt;
      message.outcome = acquireOutcomeOf(error);
      throw error;
    }
  }, message);
}

/** A release handed the lock from `from` to `granted`'s owner: by this client ('local') or the store. */
export function publishHandoff(
  lock: DiagnosedLock,
  from: string,
  granted: HoldHandle,
  via: HandoffMessage['via'],
): void {
  const message: HandoffMessage = {
    name: lock.name,
    kind: lock.kind.name,
    backend: lock.backendName,
    owner: granted.owner,
    from,
    fencingToken: granted.fencingToken,
    handle: granted,
    via,
  };
  handoffChannel.publish(message);
}
