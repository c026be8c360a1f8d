import { type SubscribeWakes, type Wake } from '../backend/index.js';
import type { SharedSubscriber } from './subscriber.js';
import { clearTimer, clockNow, setTimer } from '../support/timer.js';

/**
 * The Redis adapter's turn protocol between clients (client-turns.lua), kept out of the core, which
 * knows only the SPI's neutral hand-off offer and 'any'/'owner' wake-ups:
 * - **Local streaks.** The core offers a release's lock to this client's next waiter (cohort
 *   locking); the adapter decides how: 'handoff' (always) while the lock has passed around locally
 *   for less than `localHandoffWindowMs`, then once 'yield' (hand it over only if no other client
 *   waits; else that client gets its turn) — a contended lock cannot stay in one client for ever.
 *   A streak ends when the client's last waiter of the lock leaves.
 * - **Turn messages.** A release that gives another client its turn publishes `t:<client>` (the lock
 *   is reserved for that client for the turn window) or `p:<client>` (one permit of a semaphore is).
 *   For the other clients, `t:` means "hold back": the head waiter is woken when the window ends
 *   (the turn's client may be gone), unless another wake-up comes first; `p:` means "re-check once
 *   the window ends, unless a waiter tried meanwhile" (its answer already counts the reservation).
 *   Both are timers of the subscription, delivered to the core as an ordinary 'any' wake-up.
 */
export class ClientTurns {
  /** When the current run of local hand-offs of each lock (wait key) began (monotonic ms). */
  private readonly streaks = new Map<string, number>();
  /** The live subscription of each channel: its timers and when a waiter last tried. */
  private readonly subscriptions = new Map<string, TurnSubscription>();

  constructor(
    /** This client's id in the turn queue (client-turns.lua). */
    private readonly clientId: string,
    /** How long a released lock stays reserved for the client whose turn it is, in ms. */
    private readonly turnWindowMs: number,
    /** How long a lock may keep passing between this client's waiters before it yields, in ms. */
    private readonly localHandoffWindowMs: number,
  ) {}

  /**
   * How a release should treat the core's hand-off offer for the lock `key`: 'handoff', or 'yield'
   * once the current streak of local hand-offs is older than the window (the streak then restarts).
   */
  offerMode(key: string): 'handoff' | 'yield' {
    const now = clockNow();
    const startedAt = this.streaks.get(key);
    if (startedAt === undefined) this.streaks.set(key, now);
    else if (now - startedAt >= this.localHandoffWindowMs) {
      this.streaks.delete(key);
      return 'yield';
    }
    return 'handoff';
  }

  /** The client's last waiter of the lock `key` left: the next streak starts afresh. */
  streakEnded(key: string): void {
    this.streaks.delete(key);
  }

  /** A waiter's try on the lock whose wake-ups come on `channel` is starting (see `p:` above). */
  attempted(channel: string): void {
    const subscription = this.subscriptions.get(channel);
    if (subscription) subscription.lastAttemptAt = clockNow();
  }

  /** The backend's `subscribe`: decodes each message on `subscriber` (see the class comment). */
  subscribeWith(subscriber: SharedSubscriber): SubscribeWakes {
    return async (channel, onWake) => {
      const subscription: TurnSubscription = { deferred: undefined, recheck: undefined, lastAttemptAt: 0 };
      this.subscriptions.set(channel, subscription);
      const forget = () => {
        clearTimer(subscription.deferred);
        clearTimer(subscription.recheck?.timer);
        subscription.deferred = subscription.recheck = undefined;
        if (this.subscriptions.get(channel) === subscription) this.subscriptions.delete(channel);
      };
      let unsubscribe: () => void;
      try {
        unsubscribe = await subscriber.subscribe(channel, (message) =>
          this.deliver(message, subscription, onWake),
        );
      } catch (error) {
        forget();
        throw error;
      }
      return () => {
        forget();
        unsubscribe();
      };
    };
  }

  private deliver(message: string, subscription: TurnSubscription, onWake: (wake: Wake) => void): void {
    const other = message.length > 2 && message.slice(2) !== this.clientId;
    if (other && message.startsWith('p:')) {
      this.recheckLater(subscription, onWake);
      return;
    }
    if (other && message.startsWith('t:')) {
      // Reserved for another client: wake the head when the window ends. Never extended by the next
      // turn's message: a turn that was not taken must not keep this client waiting window after window.
      subscription.deferred ??= setTimer(() => {
        subscription.deferred = undefined;
        onWake(ANY);
      }, this.turnWindowMs)?.unref();
      return;
    }
    // Any other wake-up lets the head try now: a pending hold-back is over.
    clearTimer(subscription.deferred);
    subscription.deferred = undefined;
    onWake(message.startsWith('o:') ? { to: 'owner', owner: message.slice(2) } : ANY);
  }

  /**
   * Arms the subscription's recheck (the earliest one only): the head then tries, unless a waiter
   * tried meanwhile (its answer's retry time already accounts for the reservation, and an attempt in
   * flight would delay a local hand-off to that waiter).
   */
  private recheckLater(subscription: TurnSubscription, onWake: (wake: Wake) => void): void {
    const armedAt = clockNow();
    const at = armedAt + this.turnWindowMs;
    if (subscription.recheck && subscription.recheck.at <= at) return;
    clearTimer(subscription.recheck?.timer);
    const timer = setTimer(() => {
      subscription.recheck = undefined;
      if (subscription.lastAttemptAt < armedAt) onWake(ANY);
    }, this.turnWindowMs)?.unref();
    subscription.recheck = { timer, at };
  }
}

interface TurnSubscription {
  /** A `t:` hold-back: wakes the head when the turn window ends. */
  deferred: NodeJS.Timeout | undefined;
  /** A `p:` recheck: the head tries when it fires, unless a waiter tried since it was armed. */
  recheck: { timer: NodeJS.Timeout | undefined; at: number } | undefined;
  /** When a waiter of this channel's lock last started a try (monotonic ms). */
  lastAttemptAt: number;
}

const ANY: Wake = Object.freeze({ to: 'any' });
