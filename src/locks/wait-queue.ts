import { LockAbortedError } from './errors.js';
import { monotonicNow } from './handle.js';

/** One try at taking a lock: the value on success, else how long the current holder may still hold it. */
export type Attempt<T> = { acquired: true; value: T } | { acquired: false; retryAfterMs: number | undefined };

/** Subscribes to a lock's release notifications; resolves (to the unsubscribe function) when active. */
export type Subscribe = (key: string, onRelease: () => void) => Promise<() => void>;

interface Waiter {
  wake: () => void;
}

interface Room {
  readonly waiters: Waiter[];
  /** Bumped on every release notification, so an attempt can tell it raced with one. */
  generation: number;
  ready: Promise<() => void>;
  lingerTimer: NodeJS.Timeout | undefined;
}

/**
 * Local waiting for locks, without polling. Per lock, the waiters of this process queue in FIFO
 * order and only the head tries the lock: when it is released (notification) or when the holder's
 * lease runs out (the TTL the failed attempt returned). So a release costs one attempt per process,
 * not one per waiter, and a caller that just released cannot barge ahead of local waiters.
 *
 * The subscription for a lock outlives its last waiter by `lingerMs`, so a busy lock does not
 * subscribe and unsubscribe on every hand-off.
 */
export class WaitQueues {
  private readonly rooms = new Map<string, Room>();

  constructor(
    private readonly subscribe: Subscribe,
    private readonly lingerMs = 5_000,
  ) {}

  /** True if this process has callers queued for `key` (new callers must queue behind them). */
  hasWaiters(key: string): boolean {
    const room = this.rooms.get(key);
    return room !== undefined && room.waiters.length > 0;
  }

  /** Called for every release notification of `key`. */
  notify(key: string): void {
    const room = this.rooms.get(key);
    if (!room) return;
    room.generation++;
    room.waiters[0]?.wake();
  }

  /** Wakes every head (after a reconnect, when notifications may have been missed). */
  notifyAll(): void {
    for (const key of this.rooms.keys()) this.notify(key);
  }

  /**
   * Queues, then attempts whenever this caller is at the head and the lock may be free, until it
   * succeeds, `deadline` (monotonic ms) passes (→ undefined) or `signal` aborts (→ LockAbortedError).
   * A lock won after the caller gave up is handed to `abandon` so it is released, not leaked.
   */
  async wait<T>(
    key: string,
    lockName: string,
    attempt: () => Promise<Attempt<T>>,
    deadline: number,
    signal: AbortSignal | undefined,
    abandon: (value: T) => void,
  ): Promise<T | undefined> {
    const room = this.enter(key);
    const waiter: Waiter = { wake: () => undefined };
    room.waiters.push(waiter);
    try {
      const unsubscribe = await raceDeadline(room.ready, deadline, signal, lockName);
      if (unsubscribe === undefined) return undefined;
      for (;;) {
        if (room.waiters[0] !== waiter) {
          if ((await sleepUntilWoken(waiter, deadline, signal, lockName)) === 'deadline') return undefined;
          continue;
        }
        const generation = room.generation;
        const result = await attempt();
        if (result.acquired) {
          if (signal?.aborted) {
            abandon(result.value);
            throw new LockAbortedError(lockName, signal.reason);
          }
          return result.value;
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
      this.leave(key, room, waiter);
    }
  }

  private enter(key: string): Room {
    const room = this.rooms.get(key);
    if (room) {
      clearTimeout(room.lingerTimer);
      room.lingerTimer = undefined;
      return room;
    }
    const created: Room = { waiters: [], generation: 0, ready: undefined as never, lingerTimer: undefined };
    created.ready = this.subscribe(key, () => this.notify(key));
    created.ready.catch(() => this.rooms.get(key) === created && this.rooms.delete(key));
    this.rooms.set(key, created);
    return created;
  }

  private leave(key: string, room: Room, waiter: Waiter): void {
    const index = room.waiters.indexOf(waiter);
    if (index < 0) return;
    room.waiters.splice(index, 1);
    if (index === 0) room.waiters[0]?.wake(); // the new head must try: it may have missed releases
    if (room.waiters.length > 0 || this.rooms.get(key) !== room) return;
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
