/** What `checkLockHistory` reports, and the options it takes (see locks.ts for the history's shape). */

export interface Overlap {
  readonly lock: string;
  readonly owners: readonly string[];
  /** When the overlap began and how long it lasted, ns. */
  readonly at: string;
  readonly overlapNs: string;
}

/** A release that took effect for an owner that did not hold the lock then (L2). */
export interface ReleaseViolation {
  readonly lock: string;
  readonly proc: string;
  readonly owner: string;
  /** The release's invocation, ns. */
  readonly at: string;
  /** Who held the lock then, as the grants in the history tell (empty: nobody). */
  readonly holders: readonly string[];
}

/** A waiter of a fair lock granted while an earlier-queued one still waited (L6). */
export interface FifoViolation {
  readonly lock: string;
  /** The waiter known to be queued first (its owner, or its proc if it was never granted). */
  readonly overtaken: string;
  /** The waiter whose acquire began after that and was granted first. */
  readonly by: string;
  readonly queuedAt: string;
  readonly invokedAt: string;
  readonly grantedAt: string;
}

/** A stretch longer than the bound in which the lock was free for a waiter and nobody was granted (L7). */
export interface LivenessViolation {
  readonly lock: string;
  /** Since when a waiter could have had the lock (freed, or the waiter arrived at a free lock), ns. */
  readonly since: string;
  readonly waitedNs: string;
  /** What ended the stretch: a late grant, the waiters giving up, or the end of the history. */
  readonly endedBy: 'grant' | 'waiters-gone' | 'history-end';
  readonly waiters: readonly string[];
}

/** A write the resource decided against the fencing rule (L4). */
export interface FenceViolation {
  readonly res: string;
  readonly kind: 'accepted-stale' | 'refused-needlessly';
  readonly owner: string;
  readonly token: string;
  readonly at: string;
  /** The greatest (token, owner) the resource had accepted before it; undefined: none. */
  readonly latest: { readonly token: string; readonly owner: string } | undefined;
}

/**
 * Options of `checkLockHistory`: how strictly to measure holds, and which of the checks that need
 * more than the history (fairness, a grant bound) to run.
 */
export interface LockCheckOptions {
  /** Ignore `valid_until` when measuring believed holds (how long clients actually acted). */
  readonly strict?: boolean;
  /**
   * L6: the locks (names; `true`: all) that are fair — grants follow the order in which waiters
   * were known to be queued (their `queued` events). Unchecked without it.
   */
  readonly fair?: boolean | readonly string[];
  /**
   * L7: once a lock is free and someone waits for it, a grant follows within this many ns (the
   * history's time unit). Unchecked without it.
   */
  readonly grantWithinNs?: bigint | number;
}

/**
 * What `checkLockHistory` found: `valid` when every check passed, and for each check (L1–L7) whether
 * it passed and the violations it saw, each naming the lock, the owners and the events to look at.
 */
export interface LockCheckReport {
  readonly valid: boolean;
  readonly checks: {
    /** L1/L5: believed holds never overlapped beyond what the mode allows. */
    readonly exclusion: { readonly valid: boolean; readonly violations: readonly Overlap[] };
    /** L3: an acquire that began after another's completed got a greater token (other owners). */
    readonly tokens: {
      readonly valid: boolean;
      readonly violations: ReadonlyArray<{
        readonly lock: string;
        readonly earlier: string;
        readonly later: string;
      }>;
    };
    /** L4: the resource accepted only writes with the greatest token so far; refused only stale ones. */
    readonly fence: {
      readonly valid: boolean;
      readonly acceptedStale: number;
      readonly refusedNeedlessly: number;
      readonly rejectedStale: number;
      /** Each write decided against the rule, with the resource and the writer: what to look at. */
      readonly violations: readonly FenceViolation[];
    };
    /**
     * L2: a release that took effect (`ok`, its outcome neither 'not_owner' nor 'expired') only by an
     * owner that held the lock at its invocation: granted, neither released nor killed since, and not
     * superseded by another owner's exclusive grant. A release the service refused is no violation.
     */
    readonly ownership: { readonly valid: boolean; readonly violations: readonly ReleaseViolation[] };
    /**
     * L6 (fair locks, `options.fair`): a waiter known to be queued (its `queued` event) before another
     * waiter's acquire began is granted first — unless it gave up (its acquire failed or its outcome is
     * unknown) or was killed. A re-entry by a holder is exempt. Waiters whose enqueues overlap are not
     * ordered.
     */
    readonly fifo: {
      readonly valid: boolean;
      readonly checked: boolean;
      readonly violations: readonly FifoViolation[];
    };
    /**
     * L7 (`options.grantWithinNs`): once the lock is free for a waiter — its holds released (the
     * release's completion), lost, past their `valid_until`, or killed (at `valid_until` if recorded,
     * else at the kill) — some acquire is granted within the bound, unless every such waiter gave up
     * first.
     */
    readonly liveness: {
      readonly valid: boolean;
      readonly boundNs: string | undefined;
      readonly violations: readonly LivenessViolation[];
    };
  };
  /** Acquires whose outcome is unknown (they open no interval: the client did not enter). */
  readonly indeterminateAcquires: number;
}
