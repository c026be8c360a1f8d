/**
 * The backend contract, per lock: what the generic lock machinery (core/) asks of a store for one lock
 * of one kind. Published as `lockstock/backend` with the client-level half (core/spi.ts). A resource
 * knows its name and its private layout (keys, znodes, rows) — nothing about holds: every call carries
 * the owner it is about, so resources can be cached and dropped freely.
 *
 * Required of every backend: attempt, release, extend (when holds have leases), inspect, leave.
 * Optional, each a capability the core uses when present and never needs:
 * - wake-ups: `wakeChannel` + the backend's `subscribe` (pub/sub, LISTEN/NOTIFY), or a `watch` in
 *   each refusal (ZooKeeper's predecessor node, etcd's previous revision);
 * - local hand-off (`handsOff` + a release offer): a release passes the lock to a waiter of the same
 *   client in the same round trip (cohort locking); the 'yield' offer and the 'defer'/'later' wakes
 *   are the client-turn fairness that goes with it (Redis: client-turns.lua);
 * - `ordering`: the backend queues every waiter itself ('server-order', as ZooKeeper's sequential
 *   nodes do) instead of the kind's default;
 * - `holdCount`, `setPermits`, `unreachable` (why a wait that timed out could not tell).
 */
import type { BackendUnreachableError, LockLostReason } from '../errors.js';
import type { ReleaseOutcome } from '../types.js';

/** One try at taking a lock. */
export interface AttemptRequest {
  readonly owner: string;
  /** Lease to take in ms; undefined when the backend bounds holds by its own session (no renewal). */
  readonly leaseMs: number | undefined;
  /** The caller will wait if refused: the backend may queue it (client turns, a fair queue). */
  readonly waiting: boolean;
}

/** The lock (or a share of it) was taken. */
export class Granted {
  constructor(
    /** Fencing token: strictly increasing per lock name; re-entry returns the holder's token. */
    readonly token: number,
    /** Others may enter too (a read lock, free permits): the next local waiter should try now. */
    readonly more: boolean,
    /**
     * Settles if the store ends the hold before it is released — a watch on the holder's own node or
     * key (ZooKeeper, etcd) saw it deleted: the hold is lost at once, with this reason. Without it, a
     * hold learns of such an end on its next renewal, or when its backend session is lost.
     */
    readonly lost?: Promise<LockLostReason>,
  ) {}
}

/**
 * Refused: held by someone else for about `retryAfterMs` more (undefined: until a wake-up), and/or
 * until `watch` fires (what the backend set a watch on: the predecessor's node, the previous key).
 */
export class Busy {
  constructor(
    readonly retryAfterMs: number | undefined,
    readonly watch?: Watch,
  ) {}
}

/**
 * A one-shot watch a refused attempt set (Curator's `pathToWatch`): `changed` resolves when what it
 * watches changes (deleted, expired) — at once if it already had. The waiter tries again then, and
 * calls `cancel` when it stops waiting on it (a watch that cannot be cancelled may ignore it).
 */
export interface Watch {
  readonly changed: Promise<void>;
  /** The waiter no longer needs the watch: free what it holds. May be called after `changed` settled. */
  cancel(): void;
}

/** What one attempt found: Granted, or Busy (held by others: when to try again, or a watch). */
export type AttemptResult = Granted | Busy;

/**
 * A release may hand the lock straight to a waiter of the same client (a cohort lock): 'handoff'
 * always, 'yield' only if no other client waits (then the other client gets the turn).
 */
export interface HandOffOffer {
  readonly mode: 'handoff' | 'yield';
  readonly owner: string;
  readonly leaseMs: number | undefined;
}

/** What a release found (its outcome, as `release()` reports it), and whether it handed the lock on. */
export interface ReleaseResult {
  readonly outcome: ReleaseOutcome;
  /** Set when the lock was handed to the offered waiter (or to `handedOffOwner`): its fencing token. */
  readonly handedOffToken?: number;
  /**
   * Set when the backend chose, without an offer, to hand the lock to a waiter of the releasing
   * client (a fair lock whose next waiter is local): that waiter's owner.
   */
  readonly handedOffOwner?: string;
}

/** What a renewal (or extend) found: still ours and extended, gone, or someone else's. */
export type ExtendStatus = 'extended' | 'expired' | 'taken';

/**
 * A wake-up, decoded by the backend: anyone may try; only this owner; defer (the lock is reserved for
 * another client's turn for `ms`); or try again within `ms` at the latest (one permit of several is
 * reserved for another client's turn: if that client is gone, the permit is free after `ms`).
 */
export type Wake =
  | { readonly to: 'any' }
  | { readonly to: 'owner'; readonly owner: string }
  | { readonly to: 'defer'; readonly ms: number }
  | { readonly to: 'later'; readonly ms: number };

/** What a lock looks like right now (for monitoring; decisions belong in acquire). */
export interface LockInfo {
  readonly held: boolean;
  /** Holders right now: 0 or 1 for exclusive locks, readers or permits in use for shared ones. */
  readonly holders: number;
  /** Time left on the longest current lease, ms; undefined when free or without expiry. */
  readonly remainingMs: number | undefined;
}

/**
 * One lock of one kind on a store, as the core uses it: try to take it for an owner, release, extend
 * a lease, inspect, and leave the queue. Every call names the owner it is about; a resource keeps no
 * per-hold state, so the client may cache and drop it freely. Calls reject with the backend's errors
 * (BackendUnreachableError and the like) when the store cannot answer; the core retries or reports.
 */
export interface LockResource {
  readonly name: string;
  /**
   * Groups this client's waiters (and live holds, for re-entry) of one lock: equal for all kinds that
   * share a lock (the read and the write side of a read-write lock), distinct otherwise.
   */
  readonly waitKey: string;
  /** Where wake-ups for this lock are published; undefined: none (waiters back off and retry). */
  readonly wakeChannel: string | undefined;
  /** Whether holds carry a renewable lease ('renewable') or end with a backend session ('none'). */
  readonly leases: 'renewable' | 'none';
  /**
   * Overrides the kind's ordering of waiters: 'server-order' when the backend queues every waiter of
   * every client itself (each waiter's attempt keeps its place until `leave`) and wakes each one
   * itself (the watch in its refusal): a release then wakes none of this client's waiters.
   */
  readonly ordering?: 'local-fifo' | 'server-order';
  /** Whether `release` can hand the lock to an offered local waiter. */
  readonly handsOff: boolean;
  /**
   * One try at taking the lock for `request.owner`: Granted (with the fencing token), or Busy (with
   * when to try again, or a watch). Re-entry by a holding owner of a reentrant kind is Granted with
   * the same token. May reject with LockUpgradeError or PermitsMismatchError where the kind says so.
   */
  attempt(request: AttemptRequest): Promise<AttemptResult>;
  /**
   * `leaseLive`: this client knows the hold's lease has not ended (its validity deadline is ahead), so
   * a backend that would otherwise read its clock to tell an ended lease may skip that.
   */
  release(owner: string, offer: HandOffOffer | undefined, leaseLive?: boolean): Promise<ReleaseResult>;
  /**
   * Resets `owner`'s lease to `leaseMs` from now, if it still holds the lock: 'extended', else
   * 'expired' (nobody holds it as `owner`) or 'taken' (another owner does). The watchdog's renewals
   * and `handle.extend()` both come here.
   */
  extend(owner: string, leaseMs: number): Promise<ExtendStatus>;
  /** Holders and remaining lease right now, read from the store (for `Lock.inspect` and `isLocked`). */
  inspect(): Promise<LockInfo>;
  /**
   * A waiter stops waiting: it `won`, or timed out or aborted; `lastOfClient` when no other waiter of
   * this client waits for the lock. Backends that queued the waiter or its client dequeue it here.
   * Fire and forget: failures go to the client's events.
   */
  leave(owner: string, won: boolean, lastOfClient: boolean): void;

  /** How many holds `owner` has (reentrant kinds); 0 if none. */
  holdCount?(owner: string): Promise<number>;
  /** Semaphores: stores a new permit count for every client (waiters re-check). */
  setPermits?(permits: number): Promise<void>;
  /**
   * Whether the backend can reach its servers now: the connection error while it cannot (a
   * ZooKeeper client without a connection), else undefined. A wait that times out meanwhile says so
   * (LockTimeoutError's `disconnected` and `cause`): the lock may have been free.
   */
  unreachable?(): BackendUnreachableError | undefined;
}

/** Wake-up delivery of a backend (pub/sub, watches). Resolves once the subscription is active. */
export type SubscribeWakes = (channel: string, onWake: (wake: Wake) => void) => Promise<() => void>;
