import { LockAbortedError } from './errors.js';
import { monotonicNow } from './handle.js';

/** A failed attempt: someone holds the lock for `retryAfterMs` more (undefined: no expiry). */
export class Busy {
  constructor(readonly retryAfterMs: number | undefined) {}
}

/** One try at taking a lock: the value on success, else Busy. */
export type Attempt<T> = T | Busy;

/**
 * Subscribes to a lock's release notifications; resolves (to the unsubscribe function) when active.
 * A notification names the client whose turn it is, or is '' when anyone may try.
 */
export type Subscribe = (key: string, onRelease: (turn: string) => void) => Promise<() => void>;

export interface WaitHooks<T> {
  /** Receives a lock won after the caller gave up, so it is released, not leaked. */
  abandon(value: T): void;
  /** Monotonic time until which a won lock may be held without a release (its lease). */
  heldUntil(value: T): number;
  /** Called when the last local waiter for the key has left (the client stops queueing). */
  idle(): void;
}

/** A local waiter a release may hand the lock to directly; `ticket` says on whose behalf. */
export interface HandOff<G> {
  /** 'handoff': grant it; 'yield': grant it only if no other client waits (see claimHandOff). */
  readonly mode: 'handoff' | 'yield';
  readonly ticket: G;
  readonly waiter: object;
}

interface Waiter<T, G> {
  readonly ticket: G;
  /** Ends the waiter's current sleep (a no-op while it is not sleeping). */
  wake: () => void;
  /** Wakes the head when the local holder's lease may have run out without a release. */
  alarm: NodeJS.Timeout | undefined;
  /** The head does not try before this time: the free lock is reserved for another client. */
  notBefore: number;
  /** A lock handed to this waiter by a local release. */
  granted: T | undefined;
}

interface Room<T, G> {
  readonly waiters: Waiter<T, G>[];
  /** Bumped on every release we learn of, so an attempt can tell it raced with one. */
  generation: number;
  ready: Promise<() => void>;
  lingerTimer: NodeJS.Timeout | undefined;
  /** When the current run of local hand-offs began (monotonic ms; 0: no run). */
  streakStartedAt: number;
  idle: () => void;
}

/**
 * Local waiting for locks, without polling. Per lock, the waiters of this client queue in FIFO
 * order and only the head tries the lock: when it is released (notification) or when the holder's
 * lease runs out (the TTL the failed attempt returned). So a release costs one attempt per client,
 * not one per waiter, and a caller that just released cannot barge ahead of local waiters.
 *
 * Hand-off within the client (a cohort lock): a local holder that releases while local waiters
 * queue hands the lock to the head in the release script itself — one round trip, no notification,
 * other clients are not woken for nothing. Once the lock has been passed around locally for
 * `localHandoffWindowMs`, the next release yields: the client that has waited longest gets the turn
 * (order kept in Redis, see client-turns.lua). The window bounds how long other clients wait per
 * client ahead of them, whatever the length of the critical sections.
 *
 * The subscription for a lock outlives its last waiter by `lingerMs`, so a busy lock does not
 * subscribe and unsubscribe on every hand-off.
 */
export class WaitQueues<T, G> {
  private readonly rooms = new Map<string, Room<T, G>>();

  constructor(
    private readonly subscribe: Subscribe,
    /** This client's id, as named in notifications that give it the turn. */
    private readonly clientId: string,
    /** How long a turn reserves a free lock for its client. */
    private readonly turnWindowMs: number,
    /** How long the lock may keep passing between local waiters before another client's turn. */
    private readonly localHandoffWindowMs: number,
    private readonly lingerMs = 5_000,
  ) {}

  /** True if this client has callers queued for `key` (new callers must queue behind them). */
  hasWaiters(key: string): boolean {
    const room = this.rooms.get(key);
    return room !== undefined && room.waiters.length > 0;
  }

  /**
   * Called for every release notification of `key`. If it gives the turn to another client, the
   * head holds back until that turn would have expired, so only that client tries now. The hold-back
   * is never extended by later notifications: the head tries (and so queues its client) at least
   * once per turn window, or a client that is not queued yet could be deferred forever.
   */
  notify(key: string, turn = ''): void {
    const room = this.rooms.get(key);
    if (!room) return;
    room.generation++;
    const head = room.waiters[0];
    if (!head) return;
    const now = monotonicNow();
    if (turn === '' || turn === this.clientId) head.notBefore = 0;
    else if (head.notBefore <= now) head.notBefore = now + this.turnWindowMs;
    head.wake();
  }

  /**
   * Asked by a local holder about to release `key`. Undefined: no local waiter; release and let
   * other clients know. Otherwise the release should hand the lock to the head (`ticket`): always
   * ('handoff'), or only if no other client waits ('yield', once the lock has been passed around
   * locally for the hand-off window). Report the outcome with `granted` or `notGranted`.
   */
  claimHandOff(key: string): HandOff<G> | undefined {
    const room = this.rooms.get(key);
    const head = room?.waiters[0];
    if (!room || !head) return undefined;
    const now = monotonicNow();
    let mode: HandOff<G>['mode'] = 'handoff';
    if (room.streakStartedAt === 0) room.streakStartedAt = now;
    else if (now - room.streakStartedAt >= this.localHandoffWindowMs) {
      room.streakStartedAt = 0;
      mode = 'yield';
    }
    return { mode, ticket: head.ticket, waiter: head };
  }

  /** The release handed the lock to the claimed waiter; false if it had gone (caller must release). */
  granted(key: string, handOff: HandOff<G>, value: T): boolean {
    const room = this.rooms.get(key);
    const waiter = handOff.waiter as Waiter<T, G>;
    if (!room || !room.waiters.includes(waiter) || waiter.granted !== undefined) return false;
    waiter.granted = value;
    room.generation++; // an attempt in flight must not put the waiter back to sleep
    waiter.wake();
    return true;
  }

  /** The release did not hand the lock over (it was not ours anymore): let the head try itself. */
  notGranted(key: string): void {
    this.notify(key);
  }

  /**
   * Queues, then attempts whenever this caller is at the head and the lock may be free, until it
   * succeeds or is handed the lock, `deadline` (monotonic ms) passes (→ undefined) or `signal`
   * aborts (→ LockAbortedError). `ticket` lets a local release hand the lock over directly.
   */
  async wait(
    key: string,
    lockName: string,
    ticket: G,
    attempt: () => Promise<Attempt<T>>,
    deadline: number,
    signal: AbortSignal | undefined,
    hooks: WaitHooks<T>,
  ): Promise<T | undefined> {
    const room = this.enter(key, hooks.idle);
    const waiter: Waiter<T, G> = {
      ticket,
      wake: () => undefined,
      alarm: undefined,
      notBefore: 0,
      granted: undefined,
    };
    room.waiters.push(waiter);
    let won: T | undefined;
    try {
      const unsubscribe = await raceDeadline(room.ready, deadline, signal, lockName);
      if (unsubscribe === undefined) return undefined;
      for (;;) {
        if (waiter.granted !== undefined) {
          if (signal?.aborted) throw new LockAbortedError(lockName, signal.reason);
          return (won = waiter.granted);
        }
        if (room.waiters[0] !== waiter) {
          if ((await sleepUntilWoken(waiter, deadline, signal, lockName)) === 'deadline') return undefined;
          continue;
        }
        if (waiter.notBefore > monotonicNow()) {
          const until = Math.min(deadline, waiter.notBefore);
          const woke = await sleepUntilWoken(waiter, until, signal, lockName);
          if (woke === 'deadline' && until === deadline) return undefined;
          if (woke === 'deadline') waiter.notBefore = 0;
          continue;
        }
        const generation = room.generation;
        const result = await attempt();
        if (!(result instanceof Busy)) {
          if (waiter.granted === undefined) waiter.granted = result;
          else hooks.abandon(result); // raced with a hand-off (a re-entry of the same owner): keep that one
          continue;
        }
        if (room.generation !== generation) continue; // released or handed over while we tried
        const until =
          result.retryAfterMs === undefined
            ? deadline
            : Math.min(deadline, monotonicNow() + result.retryAfterMs + 1);
        if ((await sleepUntilWoken(waiter, until, signal, lockName)) === 'deadline' && until === deadline) {
          return undefined;
        }
      }
    } finally {
      // A lock handed over while we timed out or aborted is ours to give back.
      const unclaimed = waiter.granted !== undefined && won === undefined ? waiter.granted : undefined;
      this.leave(key, room, waiter, won === undefined ? undefined : hooks.heldUntil(won));
      if (unclaimed !== undefined) hooks.abandon(unclaimed);
    }
  }

  private enter(key: string, idle: () => void): Room<T, G> {
    const room = this.rooms.get(key);
    if (room) {
      clearTimeout(room.lingerTimer);
      room.lingerTimer = undefined;
      return room;
    }
    const created: Room<T, G> = {
      waiters: [],
      generation: 0,
      ready: undefined as never,
      lingerTimer: undefined,
      streakStartedAt: 0,
      idle,
    };
    created.ready = this.subscribe(key, (turn) => this.notify(key, turn));
    created.ready.catch(() => this.rooms.get(key) === created && this.rooms.delete(key));
    this.rooms.set(key, created);
    return created;
  }

  /** `heldUntil` is set when the leaving waiter won the lock (so a local handle holds it now). */
  private leave(key: string, room: Room<T, G>, waiter: Waiter<T, G>, heldUntil: number | undefined): void {
    clearTimeout(waiter.alarm);
    const index = room.waiters.indexOf(waiter);
    if (index < 0) return;
    room.waiters.splice(index, 1);
    const next = index === 0 ? room.waiters[0] : undefined;
    if (next && heldUntil === undefined) {
      next.wake(); // the new head must try: it may have missed releases while it was not head
    } else if (next && heldUntil !== undefined) {
      // Our handle holds the lock: its release will hand it over or notify. Only if its lease runs
      // out without a release must the new head look for itself.
      clearTimeout(next.alarm);
      next.alarm = setTimeout(() => next.wake(), Math.max(0, heldUntil - monotonicNow()));
    }
    if (room.waiters.length > 0 || this.rooms.get(key) !== room) return;
    room.streakStartedAt = 0;
    room.idle();
    room.lingerTimer = setTimeout(() => {
      if (room.waiters.length > 0 || this.rooms.get(key) !== room) return;
      this.rooms.delete(key);
      room.ready.then((unsubscribe) => unsubscribe()).catch(() => undefined);
    }, this.lingerMs);
    room.lingerTimer.unref();
  }

  /** Drops all subscriptions (client shutdown). Waiters still queued time out or abort on their own. */
  close(): void {
    for (const [key, room] of this.rooms) {
      clearTimeout(room.lingerTimer);
      this.rooms.delete(key);
      room.ready.then((unsubscribe) => unsubscribe()).catch(() => undefined);
    }
  }
}

/** Resolves with the value, or undefined at the deadline; rejects with LockAbortedError on abort. */
function raceDeadline<T>(
  promise: Promise<T>,
  deadline: number,
  signal: AbortSignal | undefined,
  lockName: string,
): Promise<T | undefined> {
  return new Promise<T | undefined>((resolve, reject) => {
    const cleanup = onDeadlineOrAbort(deadline, signal, lockName, resolve, reject);
    promise.then(
      (value) => (cleanup(), resolve(value)),
      (error: unknown) => (cleanup(), reject(error)),
    );
  });
}

function sleepUntilWoken(
  waiter: { wake: () => void },
  until: number,
  signal: AbortSignal | undefined,
  lockName: string,
): Promise<'woken' | 'deadline'> {
  return new Promise((resolve, reject) => {
    const cleanup = onDeadlineOrAbort(
      until,
      signal,
      lockName,
      () => resolve('deadline'),
      (error) => reject(error),
    );
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
  onDeadline: (value: undefined) => void,
  onAbort: (error: LockAbortedError) => void,
): () => void {
  if (signal?.aborted) {
    onAbort(new LockAbortedError(lockName, signal.reason));
    return () => undefined;
  }
  const timer =
    deadline === Infinity
      ? undefined
      : setTimeout(() => onDeadline(undefined), Math.max(0, deadline - monotonicNow()));
  const abort = () => {
    clearTimeout(timer);
    onAbort(new LockAbortedError(lockName, signal?.reason));
  };
  signal?.addEventListener('abort', abort, { once: true });
  return () => {
    clearTimeout(timer);
    signal?.removeEventListener('abort', abort);
  };
}
