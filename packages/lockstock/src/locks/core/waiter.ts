import { clearTimer, jitter, setTimer } from '../../support/timer.js';
import { LockAbortedError, LockClientClosedError } from '../errors.js';
import { Busy, type SubscribeWakes, type Wake } from './backend.js';
import type { LockKind } from './kind.js';
import { monotonicNow } from './lease.js';

/** A won attempt: the value, and whether others may enter too (shared kinds). */
export interface Won<T> {
  readonly value: T;
  readonly more: boolean;
}

/** What one caller waits for; `attempt` is one try at the lock. */
export interface WaitRequest<T, G> {
  /** The lock's wait key (LockResource.waitKey): waiters of the same lock share one room. */
  readonly key: string;
  readonly lockName: string;
  /** Where wake-ups arrive; undefined: back off and retry (spin). */
  readonly channel: string | undefined;
  readonly ordering: LockKind['ordering'];
  readonly owner: string;
  /** What a local release needs to hand this waiter the lock directly. */
  readonly ticket: G;
  attempt(): Promise<Won<T> | Busy>;
  /**
   * The refusal of a waiting try made just before the caller queued here: when it set a watch, the
   * waiter sleeps on it instead of trying again at once (the watch covers every change since that
   * try). Dropped (its watch cancelled) if anything wakes the waiter first.
   */
  readonly refused?: Busy | undefined;
  /** Monotonic ms; Infinity to wait forever. */
  readonly deadline: number;
  readonly signal: AbortSignal | undefined;
  /** Receives a value won after the caller gave up, so it is released, not leaked. */
  abandon(value: T): void;
  /**
   * Holds that end with a lease: the longest a refused waiter sleeps before trying again when its
   * refusal says neither when to retry nor what to watch (a lease that runs out wakes nobody). The
   * waiter's own lease: the only one it knows. Left out: holds end only with a release or a session.
   */
  readonly idleRecheckMs?: number;
  /** Monotonic time until which a won value may be held without a release (its lease). */
  heldUntil(value: T): number;
  /** The waiter stops waiting (`won` or not); `lastOfClient` when no other local waiter is left. */
  leave(won: boolean, lastOfClient: boolean): void;
}

/** A local waiter a release may hand the lock to directly. */
export interface HandOffClaim<G> {
  readonly ticket: G;
  readonly waiter: object;
}

interface Waiter<T, G> {
  readonly owner: string;
  readonly ticket: G;
  /** Ends the waiter's current sleep (a no-op while it is not sleeping). */
  wake: () => void;
  /** Counts the wake-ups meant for this waiter, so an attempt can tell it raced with one. */
  pokes: number;
  /** Wakes the head when the local holder's lease may have run out without a release. */
  alarm: NodeJS.Timeout | undefined;
  /** A lock handed to this waiter by a local release. */
  granted: T | undefined;
}

interface Room<T, G> {
  readonly waiters: Waiter<T, G>[];
  readonly ordering: LockKind['ordering'];
  /** Resolves (to the unsubscribe function) once wake-ups are subscribed; undefined for spin. */
  ready: Promise<(() => void) | undefined>;
  lingerTimer: NodeJS.Timeout | undefined;
}

const BACKOFF_START_MS = 2;
const BACKOFF_MAX_MS = 128;

/**
 * The one wait loop of every lock kind and backend (Curator's LockInternals, in spirit). Per lock,
 * this client's waiters form a room. The kind says how they are admitted:
 * - 'local-fifo': waiters queue in arrival order and only the head tries — when woken, or when the
 *   holder's lease runs out (the retry time its failed attempt returned). A release costs one attempt
 *   per client, and a caller that just released cannot barge ahead of local waiters. A local release
 *   may offer the lock to the head directly (claimHandOff; the backend decides whether to take the
 *   offer). Shared kinds let the next waiter try as soon as one gets in.
 * - 'server-order': the backend keeps every waiter of every client in order; each waiter tries when a
 *   wake-up names it (only the next one is woken) or when its retry time comes.
 * A refusal that carries a watch (ZooKeeper, etcd) sleeps until the watch fires. Without wake-ups or
 * a watch (spin, Redlock) waiters back off exponentially, bounded by the holder's remaining lease.
 *
 * A room's subscription outlives its last waiter by `lingerMs`, so a busy lock does not subscribe and
 * unsubscribe on every hand-off.
 */
export class Waiters {
  private readonly rooms = new Map<string, Room<unknown, unknown>>();
  /** Set by close(): every waiter then fails with LockClientClosedError (see close). */
  private closed = false;
  private onClosed!: () => void;
  /** Settles on close(): a waiter still waiting for its room's subscription stops waiting too. */
  private readonly closing = new Promise<void>((resolve) => (this.onClosed = resolve));

  constructor(
    private readonly subscribe: SubscribeWakes,
    private readonly lingerMs = 5_000,
  ) {}

  /** True if this client has callers waiting for `key` (new callers must queue behind them). */
  hasWaiters(key: string): boolean {
    const room = this.rooms.get(key);
    return room !== undefined && room.waiters.length > 0;
  }

  /**
   * Asked by a local holder about to release `key`. Undefined: no local waiter to hand it to.
   * Otherwise the release offers the lock to the head (`ticket`; the backend may decline). Report
   * the outcome with `granted` or `notGranted`.
   */
  claimHandOff<G>(key: string): HandOffClaim<G> | undefined {
    const room = this.rooms.get(key) as Room<unknown, G> | undefined;
    const head = room?.waiters[0];
    if (!room || !head || room.ordering !== 'local-fifo') return undefined;
    return { ticket: head.ticket, waiter: head };
  }

  /** The waiter of `owner` (the backend chose it for a hand-off), if it still waits here. */
  claimOwner<G>(key: string, owner: string): HandOffClaim<G> | undefined {
    const room = this.rooms.get(key) as Room<unknown, G> | undefined;
    const waiter = room?.waiters.find((w) => w.owner === owner);
    return waiter ? { ticket: waiter.ticket, waiter } : undefined;
  }

  /** The release handed the lock to the claimed waiter; false if it had gone (caller must release). */
  granted<T, G>(key: string, claim: HandOffClaim<G>, value: T): boolean {
    const room = this.rooms.get(key) as Room<T, G> | undefined;
    const waiter = claim.waiter as Waiter<T, G>;
    if (!room || !room.waiters.includes(waiter) || waiter.granted !== undefined) return false;
    waiter.granted = value;
    poke(waiter);
    return true;
  }

  /** The release did not hand the lock over (it was not ours anymore): let the head try itself. */
  notGranted(key: string): void {
    this.deliver(key, { to: 'any' });
  }

  /**
   * Queues, then attempts whenever this caller may, until it wins or is handed the lock, the deadline
   * passes (→ undefined) or the signal aborts (→ LockAbortedError).
   */
  async wait<T, G>(request: WaitRequest<T, G>): Promise<T | undefined> {
    const { lockName, deadline, signal } = request;
    const room = this.enter<T, G>(request);
    const waiter: Waiter<T, G> = {
      owner: request.owner,
      ticket: request.ticket,
      wake: () => undefined,
      pokes: 0,
      alarm: undefined,
      granted: undefined,
    };
    room.waiters.push(waiter);
    // Set only when the caller receives the lock: a lock won or handed over that is not delivered
    // (the signal aborted while the winning attempt was in flight, the deadline passed, an error) is
    // given back in `finally`, never left held (and renewed) with no handle to release it.
    let won: Won<T> | undefined;
    let ownWin: Won<T> | undefined;
    let backoff = BACKOFF_START_MS;
    let refused = request.refused?.watch !== undefined ? request.refused : undefined;
    try {
      const ready = Promise.race([room.ready, this.closing]);
      if ((await raceDeadline(ready, deadline, signal, lockName)) === 'deadline') return undefined;
      for (;;) {
        // Checked before a grant is delivered: a lock won as the client closed is given back below.
        if (this.closed) throw new LockClientClosedError(lockName);
        if (waiter.granted !== undefined) {
          if (signal?.aborted) throw new LockAbortedError(lockName, signal.reason);
          won = ownWin ?? { value: waiter.granted, more: false };
          return won.value;
        }
        if (room.ordering === 'local-fifo' && room.waiters[0] !== waiter) {
          if ((await sleep(waiter, deadline, signal, lockName)) === 'deadline') return undefined;
          continue;
        }
        const pokes = waiter.pokes;
        let result: Won<T> | Busy;
        if (refused !== undefined && pokes === 0) result = refused;
        else {
          refused?.watch?.cancel();
          try {
            result = await request.attempt();
          } catch (error) {
            // An attempt the close cut short fails as the closed client's, whatever the backend said.
            if (this.closed) throw new LockClientClosedError(lockName);
            throw error;
          }
        }
        refused = undefined;
        if (!(result instanceof Busy)) {
          if (waiter.granted === undefined) {
            waiter.granted = result.value;
            ownWin = result;
          } else request.abandon(result.value); // raced with a hand-off (a re-entry of the same owner)
          continue;
        }
        if (waiter.pokes !== pokes) {
          result.watch?.cancel();
          continue; // released or handed over while we tried
        }
        let until = deadline;
        if (result.watch !== undefined) {
          // The backend watches what stands before us (a predecessor, the previous key): its change
          // wakes us; a retry hint still bounds the sleep.
          const woken = () => poke(waiter);
          result.watch.changed.then(woken, woken);
          if (result.retryAfterMs !== undefined) {
            until = Math.min(deadline, monotonicNow() + result.retryAfterMs + 1);
          }
        } else if (request.channel === undefined) {
          // No wake-ups will come: back off (full jitter), never past the holder's lease end.
          const pause = jitter() * backoff;
          backoff = Math.min(BACKOFF_MAX_MS, backoff * 2);
          until = Math.min(deadline, monotonicNow() + Math.min(pause, result.retryAfterMs ?? Infinity));
        } else if (result.retryAfterMs !== undefined) {
          until = Math.min(deadline, monotonicNow() + result.retryAfterMs + 1);
        } else if (request.idleRecheckMs !== undefined) {
          // Defence in depth: the backend gave no retry time, yet a lease may end unannounced.
          until = Math.min(deadline, monotonicNow() + request.idleRecheckMs + 1);
        }
        let woke: 'woken' | 'deadline';
        try {
          woke = await sleep(waiter, until, signal, lockName);
        } finally {
          result.watch?.cancel();
        }
        if (woke === 'deadline' && until === deadline) return undefined;
      }
    } finally {
      refused?.watch?.cancel(); // never slept on (the deadline came first)
      // A lock won or handed over that the caller does not receive is ours to give back.
      const unclaimed = waiter.granted !== undefined && won === undefined ? waiter.granted : undefined;
      this.leave(request, room, waiter, won);
      if (unclaimed !== undefined) request.abandon(unclaimed);
    }
  }

  private enter<T, G>(request: WaitRequest<T, G>): Room<T, G> {
    const existing = this.rooms.get(request.key) as Room<T, G> | undefined;
    if (existing) {
      clearTimer(existing.lingerTimer);
      existing.lingerTimer = undefined;
      return existing;
    }
    const { key, channel } = request;
    const room: Room<T, G> = {
      waiters: [],
      ordering: request.ordering,
      ready: Promise.resolve(undefined),
      lingerTimer: undefined,
    };
    if (channel !== undefined) {
      room.ready = this.subscribe(channel, (wake) => this.deliver(key, wake));
      room.ready.catch(() => this.rooms.get(key) === room && this.rooms.delete(key));
    }
    this.rooms.set(key, room as Room<unknown, unknown>);
    return room;
  }

  /** Routes a wake-up to the waiters it concerns (see the class comment). */
  private deliver(key: string, wake: Wake): void {
    const room = this.rooms.get(key);
    if (!room) return;
    if (room.ordering === 'server-order') {
      for (const waiter of room.waiters) if (wake.to === 'any' || waiter.owner === wake.owner) poke(waiter);
      return;
    }
    // A waiter a local release has just handed the lock to is leaving: the wake-up is for the next.
    const head = room.waiters.find((w) => w.granted === undefined);
    if (head) poke(head);
  }

  /** `won` is set when the leaving waiter won the lock (so a local hold has it now). */
  private leave<T, G>(
    request: WaitRequest<T, G>,
    room: Room<T, G>,
    waiter: Waiter<T, G>,
    won: Won<T> | undefined,
  ): void {
    clearTimer(waiter.alarm);
    const index = room.waiters.indexOf(waiter);
    if (index < 0) return;
    room.waiters.splice(index, 1);
    request.leave(won !== undefined, room.waiters.length === 0);
    const next = index === 0 && room.ordering === 'local-fifo' ? room.waiters[0] : undefined;
    if (next && (won === undefined || won.more || request.channel === undefined)) {
      // The new head must try: it may have missed releases, there may be room for it too, or no
      // wake-up will ever come (it backs off from here).
      poke(next);
    } else if (next && won) {
      // Our hold has the lock: its release will hand it over or wake us. Only if its lease runs out
      // without a release must the new head look for itself. A hold without a lease end (a session
      // carries it, a counter permit) never runs out: no alarm (Node would fire one of Infinity after
      // 1 ms: an attempt in vain and a TimeoutOverflowWarning per hand-over).
      const heldUntil = request.heldUntil(won.value);
      clearTimer(next.alarm);
      next.alarm = setTimer(() => poke(next), heldUntil - monotonicNow());
    }
    if (room.waiters.length > 0 || this.rooms.get(request.key) !== room) return;
    room.lingerTimer = setTimer(() => {
      if (room.waiters.length > 0 || this.rooms.get(request.key) !== room) return;
      this.rooms.delete(request.key);
      room.ready.then((unsubscribe) => unsubscribe?.()).catch(() => undefined);
    }, this.lingerMs);
    room.lingerTimer?.unref();
  }

  /**
   * Client shutdown: drops all subscriptions and ends every wait with LockClientClosedError. A waiter
   * without a deadline would otherwise sleep for ever: nothing of a closed client wakes it (its
   * backend's watches and wake-ups are gone, and an attempt may only ever answer "busy").
   */
  close(): void {
    this.closed = true;
    this.onClosed();
    for (const room of this.rooms.values()) for (const waiter of room.waiters) poke(waiter);
    for (const [key, room] of this.rooms) {
      clearTimer(room.lingerTimer);
      this.rooms.delete(key);
      room.ready.then((unsubscribe) => unsubscribe?.()).catch(() => undefined);
    }
  }
}

function poke(waiter: { pokes: number; wake: () => void }): void {
  waiter.pokes++;
  waiter.wake();
}

/** Resolves with the value, or 'deadline'; rejects with LockAbortedError on abort. */
function raceDeadline<T>(
  promise: Promise<T>,
  deadline: number,
  signal: AbortSignal | undefined,
  lockName: string,
): Promise<T | 'deadline'> {
  return new Promise<T | 'deadline'>((resolve, reject) => {
    const cleanup = onDeadlineOrAbort(deadline, signal, lockName, () => resolve('deadline'), reject);
    promise.then(
      (value) => (cleanup(), resolve(value)),
      (error: unknown) => (cleanup(), reject(error)),
    );
  });
}

function sleep(
  waiter: { wake: () => void },
  until: number,
  signal: AbortSignal | undefined,
  lockName: string,
): Promise<'woken' | 'deadline'> {
  return new Promise((resolve, reject) => {
    const cleanup = onDeadlineOrAbort(until, signal, lockName, () => resolve('deadline'), reject);
    waiter.wake = () => {
      waiter.wake = () => undefined;
      cleanup();
      resolve('woken');
    };
  });
}

/** Arms a deadline timer and an abort listener; returns the function that disarms both. */
function onDeadlineOrAbort(
  deadline: number,
  signal: AbortSignal | undefined,
  lockName: string,
  onDeadline: () => void,
  onAbort: (error: LockAbortedError) => void,
): () => void {
  if (signal?.aborted) {
    onAbort(new LockAbortedError(lockName, signal.reason));
    return () => undefined;
  }
  // Infinity: no timer. A caller's deadline is never further than MAX_TIMER_MS (waitMs is validated);
  // a retry time may be (a key set with a longer TTL by another tool): clamped, the sleep ends early
  // and the waiter tries again — never once per millisecond, as Node's own overflow would.
  const timer = setTimer(onDeadline, deadline - monotonicNow());
  const abort = () => {
    clearTimer(timer);
    onAbort(new LockAbortedError(lockName, signal?.reason));
  };
  signal?.addEventListener('abort', abort, { once: true });
  return () => {
    clearTimer(timer);
    signal?.removeEventListener('abort', abort);
  };
}
