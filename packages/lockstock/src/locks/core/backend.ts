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
 * - hand-off (`handsOff` + a release offer): a release passes the lock to a waiter of the same
 *   client in the same round trip (cohort locking), or declines by its own fairness policy (Redis
 *   gives other clients turns: its adapter's business, redis/turns.ts); a store that queues every
 *   waiter may hand the lock to the next one when it is the releasing client's (`handedOffOwner`);
 * - `ordering`: the backend queues every waiter itself ('server-order', as ZooKeeper's sequential
 *   nodes do) instead of the kind's default;
 * - `holdCount`, `setPermits`, `unreachable` (why a wait that timed out could not tell).
 */
import { brandedInstanceOf, SPI_BRAND, SPI_VERSION } from '../../support/brand.js';
import type { BackendUnreachableError, LockLostReason } from '../errors.js';
import type { HolderMetadata, LockHolderInfo } from './holder.js';

/** What `release()` found. It never deletes another owner's lock. */
export type ReleaseOutcome =
  /** This hold was the last one; the lock is free (or handed to the next waiter). */
  | 'released'
  /** A reentrant hold was released but the same owner still holds the lock (outer holds remain). */
  | 'still_held'
  /** Another owner holds the lock now (ours had expired and was taken); nothing was changed. */
  | 'not_owner'
  /** There was no hold to release: it had expired or was deleted. */
  | 'expired';

/** One try at taking a lock. */
export interface AttemptRequest {
  readonly owner: string;
  /** Lease to take in ms; undefined when the backend bounds holds by its own session (no renewal). */
  readonly leaseMs: number | undefined;
  /** The caller will wait if refused: the backend may queue it (client turns, a fair queue). */
  readonly waiting: boolean;
  /**
   * Who takes the hold (host, pid, label, trace id, when): a backend MAY store it with a new hold and
   * report it in `inspect().heldBy` (capabilities.holderMetadata), `encodeHolder` being the shared
   * text form. A re-entry keeps the first hold's. Absent from callers of older SPI users: store none.
   */
  readonly holder?: HolderMetadata;
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

  /** Recognises a Granted of another copy of lockstock too (same SPI version): see brand.ts. */
  static [Symbol.hasInstance](value: unknown): boolean {
    return brandedInstanceOf(this, value);
  }
}
Object.defineProperty(Granted.prototype, SPI_BRAND, { value: SPI_VERSION });

/**
 * Refused: held by someone else for about `retryAfterMs` more (undefined: until a wake-up), and/or
 * until `watch` fires (what the backend set a watch on: the predecessor's node, the previous key).
 */
export class Busy {
  constructor(
    readonly retryAfterMs: number | undefined,
    readonly watch?: Watch,
  ) {}

  /** Recognises a Busy of another copy of lockstock too (same SPI version): see brand.ts. */
  static [Symbol.hasInstance](value: unknown): boolean {
    return brandedInstanceOf(this, value);
  }
}
Object.defineProperty(Busy.prototype, SPI_BRAND, { value: SPI_VERSION });

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
 * The hand-off capability (`LockResource.handsOff`): the core offers a release the next waiter of
 * the same client, so the release can pass the lock straight to it in the same round trip (a cohort
 * lock). The backend may decline, by its own fairness policy (Redis lets other clients take turns):
 * then the release frees the lock as without an offer, and wakes waiters as it always does.
 */
export interface HandOffOffer {
  /** The waiter's owner: the release grants the lock to it, with a lease of `leaseMs`. */
  readonly owner: string;
  readonly leaseMs: number | undefined;
  /** The waiter's holder metadata (see AttemptRequest.holder), for a backend that stores it. */
  readonly holder?: HolderMetadata;
}

/** What a release found (its outcome, as `release()` reports it), and whether it handed the lock on. */
export interface ReleaseResult {
  readonly outcome: ReleaseOutcome;
  /** Set when the lock was handed to the offered waiter (or to `handedOffOwner`): its fencing token. */
  readonly handedOffToken?: number;
  /**
   * Server order (a store that queues every waiter): set when the release, without an offer, handed
   * the lock to the next waiter in the store's queue because it belongs to the releasing client —
   * that waiter's owner. The core gives the hold to that waiter (or releases it, if it gave up).
   */
  readonly handedOffOwner?: string;
}

/** What a renewal (or extend) found: still ours and extended, gone, or someone else's. */
export type ExtendStatus = 'extended' | 'expired' | 'taken';

/**
 * A wake-up, decoded by the backend: anyone may try (in a local-FIFO room, the head), or only the
 * waiter of this owner (server order). A backend with protocols of its own (Redis's turns between
 * clients) turns its messages into these, with timers of its own where a message means "later".
 */
export type Wake = { readonly to: 'any' } | { readonly to: 'owner'; readonly owner: string };

/** What a lock looks like right now (for monitoring; decisions belong in acquire). */
export interface LockInfo {
  readonly held: boolean;
  /** Holders right now: 0 or 1 for exclusive locks, readers or permits in use for shared ones. */
  readonly holders: number;
  /** Time left on the longest current lease, ms; undefined when free or without expiry. */
  readonly remainingMs: number | undefined;
  /**
   * Who holds it, from the store: each holder's owner id and the metadata its acquire stored (host,
   * pid, label, trace id, since when); empty when free. Undefined where the backend keeps no holder
   * metadata (its `capabilities.holderMetadata` is not true). Read apart from `held`: a hold taken or
   * ended between the reads may be missing or left over.
   */
  readonly heldBy?: readonly LockHolderInfo[];
  /**
   * Waiters in the store's queue right now, of every client, where the store queues each waiter
   * (ZooKeeper's exclusive locks, etcd's exclusive locks and semaphores, PostgreSQL's fair lock); undefined
   * elsewhere: on Redis and PostgreSQL's other kinds one waiter per client waits on the store (the
   * others wait in the client: the `waiters` metric of lockstock/otel), a read-write lock's queue
   * mixes both sides, a ZooKeeper semaphore queues its waiters behind a gate (Curator's), MySQL keeps
   * no queue it shows. Read apart from `holders`.
   */
  readonly waiting?: number;
}

/** Who holds an exclusive lock right now, read from the store (an election's leader). */
export interface LockHolder {
  /** The holder's owner id, exactly as its attempt gave it. */
  readonly owner: string;
  /** The fencing token its hold was granted. */
  readonly fencingToken: number;
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
   * Ends `owner`'s hold. `offer`: see HandOffOffer (only when `handsOff`). `leaseLive`: a hint from
   * the core's own validity rule — the hold's lease has not ended by this client's clock (its
   * validity deadline is ahead), so a backend that would otherwise read its store's clock to tell an
   * ended lease may skip that; false when unsure. Never needed for correctness of the answer.
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
   * Semaphores whose store keeps the permit count (see setPermits): permits free right now by that
   * count, which another client may have changed. Without it, `available()` answers from the count
   * this client was configured with, less `inspect().holders`.
   */
  available?(): Promise<number>;
  /**
   * Exclusive kinds: the holder and its fencing token, read in one step (undefined: free). With it,
   * a backend without an `election` factory gets the generic client's election over this lock.
   */
  readHolder?(): Promise<LockHolder | undefined>;
  /**
   * Whether the backend can reach its servers now: the connection error while it cannot (a
   * ZooKeeper client without a connection), else undefined. A wait that times out meanwhile says so
   * (LockTimeoutError's `disconnected` and `cause`): the lock may have been free.
   */
  unreachable?(): BackendUnreachableError | undefined;
}

/**
 * The store's part of a count-down latch (LockBackend.latch): the count, kept where every client sees
 * it, and how a waiter learns that it reached zero. The core owns the rest (core/latch.ts): it checks
 * the count given to trySetCount, and a waiter reads the count, sleeps until a wake-up on
 * `wakeChannel` or the watch of `watchCount` fires (or backs off, given neither), and reads again.
 */
export interface LatchResource {
  readonly name: string;
  /**
   * Where the count down that reaches zero publishes (delivered by the backend's `subscribe`);
   * undefined when waiters watch (`watchCount`) or back off.
   */
  readonly wakeChannel: string | undefined;
  /** Stores `count` (a positive integer) unless the latch is counting already: true if stored. */
  trySetCount(count: number): Promise<boolean>;
  /**
   * One count down, never below zero: the count left. The one that reaches zero must wake the
   * waiters: publish on `wakeChannel`, or change what `watchCount` watches (delete the count).
   */
  countDown(): Promise<number>;
  /** The count left (0 when never set or already released). */
  count(): Promise<number>;
  /**
   * Stores that watch (ZooKeeper, etcd): undefined when the count is zero now, else a watch that
   * fires when the count changes or goes (the waiter reads again then). Without it, waiters read
   * `count()` on each wake-up.
   */
  watchCount?(): Promise<Watch | undefined>;
}

/** Wake-up delivery of a backend (pub/sub, watches). Resolves once the subscription is active. */
export type SubscribeWakes = (channel: string, onWake: (wake: Wake) => void) => Promise<() => void>;
