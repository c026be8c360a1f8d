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

/**
 * How a local holder releases: `handoff` — a local waiter's attempt follows on the same connection,
 * notify nobody; `yield` — it follows, but waiters of other clients go first; `notify` — no local
 * waiter, wake the others.
 */
export type ReleaseMode = 'handoff' | 'yield' | 'notify';

interface Waiter {
  /** Ends the waiter's current sleep (a no-op while it is not sleeping). */
  wake: () => void;
  /** Wakes the head when the local holder's lease may have run out without a release. */
  alarm: NodeJS.Timeout | undefined;
  /** The head does not try before this time: the free lock is reserved for another client. */
  notBefore: number;
}

interface Room {
  readonly waiters: Waiter[];
  /** Bumped on every release we learn of, so an attempt can tell it raced with one. */
  generation: number;
  ready: Promise<() => void>;
  lingerTimer: NodeJS.Timeout | undefined;
  /** Releases handed to a local waiter in a row (see claimHandOff). */
  localStreak: number;
  idle: () => void;
}

/**
 * Local waiting for locks, without polling. Per lock, the waiters of this process queue in FIFO
 * order and only the head tries the lock: when it is released (notification) or when the holder's
 * lease runs out (the TTL the failed attempt returned). So a release costs one attempt per process,
 * not one per waiter, and a caller that just released cannot barge ahead of local waiters.
 *
 * Hand-off within the client (a cohort lock): when a local holder releases while local waiters
 * queue, the release is sent without notifying anyone and the head's attempt follows it on the same
 * connection, so Redis runs the two back to back — the lock passes in one round trip and other
 * clients are not woken for nothing. After `maxLocalHandoffs` in a row the release yields: the
 * client that has waited longest gets the turn (order kept in Redis, see client-turns.lua).
 *
 * The subscription for a lock outlives its last waiter by `lingerMs`, so a busy lock does not
 * subscribe and unsubscribe on every hand-off.
 */
export class WaitQueues {
  private readonly rooms = new Map<string, Room>();

  constructor(
    private readonly subscribe: Subscribe,
    /** This client's id, as named in notifications that give it the turn. */
    private readonly clientId: string,
    /** How long a turn reserves a free lock for its client. */
    private readonly turnWindowMs: number,
    private readonly lingerMs = 5_000,
    private readonly maxLocalHandoffs = 16,
  ) {}

  /** True if this process has callers queued for `key` (new callers must queue behind them). */
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
   * Asked by a local holder about to release `key`: how to release. For `handoff` and `yield`, call
   * `followRelease` right after sending the release, so the local head's attempt is the next command
   * on the connection.
   */
  claimHandOff(key: string): ReleaseMode {
    const room = this.rooms.get(key);
    if (!room || room.waiters.length === 0) return 'notify';
    if (room.localStreak >= this.maxLocalHandoffs) {
      room.localStreak = 0;
      return 'yield';
    }
    room.localStreak++;
    return 'handoff';
  }

  /** Wakes the local head after a `handoff`/`yield` release was sent (see claimHandOff). */
  followRelease(key: string): void {
    const room = this.rooms.get(key);
    const head = room?.waiters[0];
    if (!room || !head) return;
    room.generation++;
    head.notBefore = 0;
    head.wake();
  }

  /**
   * Queues, then attempts whenever this caller is at the head and the lock may be free, until it
   * succeeds, `deadline` (monotonic ms) passes (→ undefined) or `signal` aborts (→ LockAbortedError).
   */
  async wait<T>(
    key: string,
    lockName: string,
    attempt: () => Promise<Attempt<T>>,
    deadline: number,
    signal: AbortSignal | undefined,
    hooks: WaitHooks<T>,
  ): Promise<T | undefined> {
    const room = this.enter(key, hooks.idle);
    const waiter: Waiter = { wake: () => undefined, alarm: undefined, notBefore: 0 };
    room.waiters.push(waiter);
    let won: T | undefined;
    try {
      const unsubscribe = await raceDeadline(room.ready, deadline, signal, lockName);
      if (unsubscribe === undefined) return undefined;
      for (;;) {
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
          if (signal?.aborted) {
            hooks.abandon(result);
            throw new LockAbortedError(lockName, signal.reason);
          }
          won = result;
          return result;
        }
        if (room.generation !== generation) continue; // released while our attempt was in flight
        const until =
          result.retryAfterMs === undefined
            ? deadline
            : Math.min(deadline, monotonicNow() + result.retryAfterMs + 1);
        if ((await sleepUntilWoken(waiter, until, signal, lockName)) === 'deadline' && until === deadline) {
          return undefined;
        }
      }
    } finally {
      this.leave(key, room, waiter, won === undefined ? undefined : hooks.heldUntil(won));
    }
  }

  private enter(key: string, idle: () => void): Room {
    const room = this.rooms.get(key);
    if (room) {
      clearTimeout(room.lingerTimer);
      room.lingerTimer = undefined;
      return room;
    }
    const created: Room = {
      waiters: [],
      generation: 0,
      ready: undefined as never,
      lingerTimer: undefined,
      localStreak: 0,
      idle,
    };
    created.ready = this.subscribe(key, (turn) => this.notify(key, turn));
    created.ready.catch(() => this.rooms.get(key) === created && this.rooms.delete(key));
    this.rooms.set(key, created);
    return created;
  }

  /** `heldUntil` is set when the leaving waiter won the lock (so a local handle holds it now). */
  private leave(key: string, room: Room, waiter: Waiter, heldUntil: number | undefined): void {
    clearTimeout(waiter.alarm);
    const index = room.waiters.indexOf(waiter);
    if (index < 0) return;
    room.waiters.splice(index, 1);
    const next = index === 0 ? room.waiters[0] : undefined;
    if (next && heldUntil === undefined) {
      next.wake(); // the new head must try: it may have missed releases while it was not head
    } else if (next && heldUntil !== undefined) {
      // Our handle holds the lock: its release will hand off or notify. Only if its lease runs out
      // without a release must the new head look for itself.
      clearTimeout(next.alarm);
      next.alarm = setTimeout(() => next.wake(), Math.max(0, heldUntil - monotonicNow()));
    }
    if (room.waiters.length > 0 || this.rooms.get(key) !== room) return;
    room.localStreak = 0;
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
  waiter: Waiter,
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
