/**
 * A lock kind, as the generic machinery sees it: who owns a hold by default, whether the same owner
 * re-enters, how the waiters of one client are admitted, and whether several holders fit at once.
 * The waiter and the lock read these fields; no kind is special-cased anywhere else.
 */
import type { LockFamily } from './family.js';

export interface LockKind {
  /** Reported in events, errors and benchmark rows. */
  readonly name: KindName;
  /** Owner when the caller names none: a fresh one per acquire, or the current `run()` task's. */
  readonly defaultOwner: 'fresh' | 'task';
  /** The same owner acquiring again adds a hold (and must not queue behind waiters for itself). */
  readonly reentrant: boolean;
  /**
   * 'local-fifo': this client's waiters queue in arrival order and only the head tries (a release can
   * hand the lock to it). 'server-order': the backend orders every waiter of every client; each
   * waiter tries when woken by name or when its retry time comes.
   */
  readonly ordering: 'local-fifo' | 'server-order';
  /** Several holders at once: after one waiter gets in, the next local waiter tries right away. */
  readonly shared: boolean;
  /**
   * The backend may refuse an owner with LockUpgradeError (a read holder taking the write side):
   * tryAcquire() then answers undefined, acquire() throws.
   */
  readonly upgradeRefused?: true;
}

/** The name of a lock kind, as events, errors, diagnostics and reports give it. */
export type KindName =
  'mutex' | 'reentrant' | 'fair' | 'read' | 'write' | 'semaphore' | 'counter-semaphore' | 'spin';

const kind = (k: LockKind): LockKind => Object.freeze(k);

export const KINDS = {
  /** Exclusive, a fresh owner per acquire; cohort hand-off within a client, turns between clients. */
  mutex: kind({
    name: 'mutex',
    defaultOwner: 'fresh',
    reentrant: false,
    ordering: 'local-fifo',
    shared: false,
  }),
  /** Exclusive, re-entered by the same owner (the run() task by default). */
  reentrant: kind({
    name: 'reentrant',
    defaultOwner: 'task',
    reentrant: true,
    ordering: 'local-fifo',
    shared: false,
  }),
  /** Reentrant, strictly first come first served across all clients. */
  fair: kind({
    name: 'fair',
    defaultOwner: 'task',
    reentrant: true,
    ordering: 'server-order',
    shared: false,
  }),
  /** The shared side of a read-write lock. */
  read: kind({
    name: 'read',
    defaultOwner: 'task',
    reentrant: true,
    ordering: 'local-fifo',
    shared: true,
  }),
  /** The exclusive side of a read-write lock. */
  write: kind({
    name: 'write',
    defaultOwner: 'task',
    reentrant: true,
    ordering: 'local-fifo',
    shared: false,
    upgradeRefused: true,
  }),
  /** Up to N holders, each permit with its own lease. */
  semaphore: kind({
    name: 'semaphore',
    defaultOwner: 'fresh',
    reentrant: false,
    ordering: 'local-fifo',
    shared: true,
  }),
  /** Up to N holders counted without leases (Redisson's RSemaphore): a crashed holder's permit leaks. */
  counterSemaphore: kind({
    name: 'counter-semaphore',
    defaultOwner: 'fresh',
    reentrant: false,
    ordering: 'local-fifo',
    shared: true,
  }),
  /**
   * Reentrant and exclusive, waiting without wake-ups (its resource has no wake channel): for very
   * many locks. Waiters of any kind back off the same way when their backend has no wake-ups.
   */
  spin: kind({
    name: 'spin',
    defaultOwner: 'task',
    reentrant: true,
    ordering: 'local-fifo',
    shared: false,
  }),
} satisfies Record<string, LockKind>;

/** The family a kind's locks belong to (both sides of a read-write lock are 'read-write'). */
export function familyOf(kind: KindName): LockFamily {
  return kind === 'read' || kind === 'write' ? 'read-write' : kind;
}
