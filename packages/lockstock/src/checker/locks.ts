import type { HistoryEvent } from './history.js';

/**
 * Direct checks of a lock history (the shape of RELIABILITY.md §4): what clients believed they held,
 * the tokens the lock service handed out, and what the fenced resource accepted. Linear sweeps, so
 * they scale to any history a test records; `checkLinearizable` answers the stronger question.
 *
 * Client events: `acquire` (`ok` with `owner`, `token`, optional `valid_until`; `mode` on the invoke:
 * 'x' exclusive (default), 'r'/'w' read-write, 'p' a permit of `permits`), `release` (its invoke ends
 * the hold: Maelstrom's rule), `lost` (`ok`: the client learned it lost the hold). Resource events
 * (`src: 'resource'`): `write` answered `ok` (accepted) or `fail` with `error: 'fence'`, with the
 * writer's `token` and `owner`, per resource `res`. Harness events (`src: 'harness'`): a fault
 * `{ f: 'fault', fault: 'kill', target: proc }` (SIGKILL) ends every hold of `target` then — a dead
 * process acts no more (RELIABILITY.md §4.2 L1: process death ends the interval).
 *
 * A waiter's place in a fair lock's queue, once known, is `{ f: 'queued', type: 'ok', proc, lock }`
 * recorded while its acquire is pending: by the waiter when the store acknowledged its enqueue, or by
 * an observer that saw it in the store's queue (never before the enqueue happened). Where an observer
 * of the store sees its grants, `{ f: 'offered', type: 'ok', proc, lock }` (recorded while the acquire
 * is pending, never before the store granted) says the store gave the waiter the lock then: its place
 * ends there even if the grant never reached it as a hold (a reply lost, or answered after its lease
 * ran out while the client was paused) and it queues again.
 */

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

interface Hold {
  readonly lock: string;
  readonly owner: string;
  readonly mode: string;
  readonly permits: number;
  readonly start: bigint;
  end: bigint;
}

const timeOf = (event: HistoryEvent, index: number): bigint =>
  event.t === undefined ? BigInt(index) : BigInt(event.t);

/**
 * Runs every lock check; `strict` ignores `valid_until` (how long clients actually acted); `fair`
 * and `grantWithinNs` turn on the FIFO and liveness checks.
 */
export function checkLockHistory(
  events: readonly HistoryEvent[],
  options: LockCheckOptions = {},
): LockCheckReport {
  const client = events.filter(
    (e) => (e.src !== 'resource' && e.src !== 'harness') || (e.src === 'harness' && isKill(e)),
  );
  const { holds, indeterminate } = holdsOf(client, events, options.strict ?? false);
  const exclusion = overlaps(holds);
  const tokens = tokenOrder(client, events);
  const fence = fenceSafety(events);
  const ownership = releaseOwnership(client, events);
  const fair = options.fair ?? false;
  const fifo = fair === false ? [] : fifoOrder(client, events, fair);
  const bound = options.grantWithinNs === undefined ? undefined : BigInt(options.grantWithinNs);
  const liveness = bound === undefined ? [] : grantsWithin(client, events, bound);
  const valid =
    exclusion.length === 0 &&
    tokens.length === 0 &&
    fence.violations.length === 0 &&
    ownership.length === 0 &&
    fifo.length === 0 &&
    liveness.length === 0;
  return {
    valid,
    checks: {
      exclusion: { valid: exclusion.length === 0, violations: exclusion },
      tokens: { valid: tokens.length === 0, violations: tokens },
      fence: { valid: fence.violations.length === 0, ...fence },
      ownership: { valid: ownership.length === 0, violations: ownership },
      fifo: { valid: fifo.length === 0, checked: fair !== false, violations: fifo },
      liveness: {
        valid: liveness.length === 0,
        boundNs: bound === undefined ? undefined : String(bound),
        violations: liveness,
      },
    },
    indeterminateAcquires: indeterminate,
  };
}

/** Believed holds: from an acquire's ok to the release's invoke, a `lost`, `valid_until` or the end. */
function holdsOf(client: readonly HistoryEvent[], all: readonly HistoryEvent[], strict: boolean) {
  // A hold never released, lost or timed out is still held when the history ends: just past its end.
  const end = all.length === 0 ? 0n : timeOf(all[all.length - 1]!, all.length - 1) + 1n;
  const index = new Map(all.map((e, i) => [e, i]));
  const open = new Map<string, Hold[]>(); // proc+lock → its holds, innermost last
  const invokes = new Map<string, HistoryEvent>();
  const holds: Hold[] = [];
  let indeterminate = 0;
  for (const event of client) {
    const t = timeOf(event, index.get(event)!);
    if (isKill(event)) {
      const victim = `${String(event.target)}\u0000`;
      for (const [slot, list] of open) {
        if (!slot.startsWith(victim)) continue;
        for (const hold of list) if (hold.end > t) hold.end = t;
        open.delete(slot);
      }
      continue;
    }
    if (event.f === 'queued' || event.f === 'offered') continue; // a queue's events: no hold, no completion
    const lock = String(event.lock ?? 'lock');
    const slot = `${event.proc}\u0000${lock}`;
    if (event.type === 'invoke') {
      invokes.set(event.proc, event);
      if (event.f === 'release') {
        const hold = open.get(slot)?.pop();
        if (hold) hold.end = hold.end < t ? hold.end : t;
      }
      continue;
    }
    const invoke = invokes.get(event.proc);
    invokes.delete(event.proc);
    if (event.f === 'acquire' && event.type === 'info') indeterminate++;
    if (event.f === 'acquire' && event.type === 'ok') {
      const validUntil = !strict && event.valid_until !== undefined ? BigInt(String(event.valid_until)) : end;
      const hold: Hold = {
        lock,
        owner: String(event.owner ?? event.proc),
        mode: String(invoke?.mode ?? event.mode ?? 'x'),
        permits: Number(invoke?.permits ?? event.permits ?? 1),
        start: t,
        end: validUntil,
      };
      holds.push(hold);
      let list = open.get(slot);
      if (!list) open.set(slot, (list = []));
      list.push(hold);
    }
    if (event.f === 'lost' && event.type === 'ok') {
      for (const hold of open.get(slot) ?? []) if (hold.end > t) hold.end = t;
      open.delete(slot);
    }
  }
  for (const event of invokes.values()) if (event.f === 'acquire') indeterminate++;
  return { holds, indeterminate };
}

/** A harness event saying a process was SIGKILLed (its holds end there). */
const isKill = (event: HistoryEvent): boolean =>
  event.src === 'harness' &&
  event.f === 'fault' &&
  event.fault === 'kill' &&
  typeof event.target === 'string';

/** Sweeps each lock's hold endpoints; reports each stretch where the mode's bound was exceeded. */
function overlaps(holds: readonly Hold[]): Overlap[] {
  const byLock = new Map<string, Hold[]>();
  for (const hold of holds) {
    let list = byLock.get(hold.lock);
    if (!list) byLock.set(hold.lock, (list = []));
    list.push(hold);
  }
  const violations: Overlap[] = [];
  for (const [lock, list] of byLock) {
    // A hold that ended the instant it began (released, lost or past its valid_until at once)
    // overlaps nothing — and, sorted end first at that instant, it would never leave the sweep.
    const points = list
      .filter((hold) => hold.end > hold.start)
      .flatMap((hold) => [
        { t: hold.start, open: true, hold },
        { t: hold.end, open: false, hold },
      ]);
    // An end before a start at the same instant: holds that touch do not overlap.
    points.sort((a, b) => (a.t !== b.t ? (a.t < b.t ? -1 : 1) : a.open === b.open ? 0 : a.open ? 1 : -1));
    const inside = new Set<Hold>();
    let since: bigint | undefined;
    let owners: string[] = [];
    for (const point of points) {
      if (point.open) inside.add(point.hold);
      else inside.delete(point.hold);
      const bad = exceeds([...inside]);
      if (bad && since === undefined) {
        since = point.t;
        owners = [...new Set([...inside].map((h) => h.owner))];
      } else if (!bad && since !== undefined) {
        violations.push({ lock, owners, at: String(since), overlapNs: String(point.t - since) });
        since = undefined;
      }
    }
  }
  return violations;
}

/** Whether these simultaneous holds break their mode: exclusive, read-write or permits. */
function exceeds(inside: readonly Hold[]): boolean {
  const owners = new Set(inside.map((h) => h.owner));
  if (owners.size < 2) return false; // one owner (re-entrant holds) is fine
  const writers = inside.filter((h) => h.mode === 'x' || h.mode === 'w');
  if (writers.length > 0) return true; // a writer (or exclusive hold) beside another owner
  const permits = inside.filter((h) => h.mode === 'p');
  if (permits.length > 0) return permits.length > Math.max(...permits.map((h) => h.permits));
  return false; // readers only
}

/** L3: acquires ordered in real time (one completed before the other began) have growing tokens. */
function tokenOrder(client: readonly HistoryEvent[], all: readonly HistoryEvent[]) {
  const index = new Map(all.map((e, i) => [e, i]));
  const violations: Array<{ lock: string; earlier: string; later: string }> = [];
  const invokedAt = new Map<string, bigint>();
  const granted: Array<{ lock: string; owner: string; token: bigint; invoked: bigint; done: bigint }> = [];
  // A re-entry returns the holder's own token (lock, owner and token all seen before): it may be
  // smaller than a token another reader or permit holder got meanwhile, and orders nothing.
  const seen = new Set<string>();
  for (const event of client) {
    if (event.f !== 'acquire') continue;
    const t = timeOf(event, index.get(event)!);
    if (event.type === 'invoke') invokedAt.set(event.proc, t);
    else if (event.type === 'ok' && event.token !== undefined) {
      const lock = String(event.lock ?? 'lock');
      const owner = String(event.owner ?? event.proc);
      const token = BigInt(String(event.token));
      const grant = `${lock}\u0000${owner}\u0000${token}`;
      if (seen.has(grant)) continue;
      seen.add(grant);
      granted.push({ lock, owner, token, invoked: invokedAt.get(event.proc) ?? t, done: t });
    }
  }
  // One sweep per lock, O(n log n): grants in the order they were invoked; before each, every grant
  // that completed earlier joins the "seen" set, of which only the greatest token and the greatest
  // token of another owner matter (the one to compare with when the greatest is the same owner's).
  type Grant = (typeof granted)[number];
  const byTime = (key: 'done' | 'invoked') => (a: Grant, b: Grant) =>
    a[key] < b[key] ? -1 : a[key] > b[key] ? 1 : 0;
  const locks = new Map<string, Grant[]>();
  for (const grant of granted) {
    let list = locks.get(grant.lock);
    if (!list) locks.set(grant.lock, (list = []));
    list.push(grant);
  }
  for (const list of locks.values()) {
    const done = [...list].sort(byTime('done'));
    let next = 0;
    let best: Grant | undefined;
    let bestOther: Grant | undefined; // the greatest token of an owner other than best's
    for (const later of [...list].sort(byTime('invoked'))) {
      for (; next < done.length && done[next]!.done < later.invoked; next++) {
        const seen = done[next]!;
        if (!best || seen.token > best.token) {
          if (best && best.owner !== seen.owner) bestOther = best;
          best = seen;
        } else if (seen.owner !== best.owner && (!bestOther || seen.token > bestOther.token)) {
          bestOther = seen;
        }
      }
      const earlier = best && best.owner !== later.owner ? best : bestOther;
      if (earlier && later.token <= earlier.token) {
        violations.push({
          lock: later.lock,
          earlier: `${earlier.owner}@${earlier.token}`,
          later: `${later.owner}@${later.token}`,
        });
      }
    }
  }
  return violations;
}

/** L4 at the resource, in the order it decided: accepted writes never stale, refusals never needless. */
function fenceSafety(events: readonly HistoryEvent[]) {
  const best = new Map<string, { token: bigint; owner: string }>();
  const violations: FenceViolation[] = [];
  let acceptedStale = 0;
  let refusedNeedlessly = 0;
  let rejectedStale = 0;
  events.forEach((event, index) => {
    if (event.src !== 'resource' || event.f !== 'write' || event.token === undefined) return;
    const res = String(event.res ?? 'resource');
    const token = BigInt(String(event.token));
    const owner = String(event.owner ?? '');
    const max = best.get(res);
    const fresh = !max || token > max.token || (token === max.token && owner === max.owner);
    const violation = (kind: FenceViolation['kind']) =>
      violations.push({
        res,
        kind,
        owner,
        token: String(token),
        at: String(timeOf(event, index)),
        latest: max && { token: String(max.token), owner: max.owner },
      });
    if (event.type === 'ok') {
      if (!fresh) {
        acceptedStale++;
        violation('accepted-stale');
      } else best.set(res, { token, owner });
    } else if (event.type === 'fail' && event.error === 'fence') {
      if (fresh) {
        refusedNeedlessly++;
        violation('refused-needlessly');
      } else rejectedStale++;
    }
  });
  return { acceptedStale, refusedNeedlessly, rejectedStale, violations };
}

const EXCLUSIVE = new Set(['x', 'w']);
/** Release outcomes by which the service said it changed nothing (types.ts's ReleaseOutcome). */
const REFUSED_RELEASES = new Set(['not_owner', 'expired']);

/**
 * L2: a release that took effect was by a holder. The grants are the service's view, not the clients'
 * belief: a grant lives from its acquire's `ok` until its owner's release, its process's kill, or an
 * exclusive grant to another owner (the service gave the lock away, so the old hold is gone). A lost
 * hold or a passed `valid_until` ends nothing here: the service may still have kept it.
 */
function releaseOwnership(client: readonly HistoryEvent[], all: readonly HistoryEvent[]): ReleaseViolation[] {
  const index = new Map(all.map((e, i) => [e, i]));
  const live = new Map<string, Array<{ owner: string; proc: string }>>(); // lock → grants
  const lastOwner = new Map<string, string>(); // proc+lock → the owner of its latest grant
  const invokes = new Map<string, HistoryEvent>();
  const releasing = new Map<
    string,
    { lock: string; owner: string; at: bigint; holders: string[] | undefined }
  >();
  const violations: ReleaseViolation[] = [];
  for (const event of client) {
    if (isKill(event)) {
      for (const grants of live.values()) {
        for (let i = grants.length - 1; i >= 0; i--)
          if (grants[i]!.proc === event.target) grants.splice(i, 1);
      }
      continue;
    }
    if (event.f === 'queued' || event.f === 'offered' || event.f === 'lost') continue;
    const lock = String(event.lock ?? 'lock');
    const grants = live.get(lock) ?? [];
    live.set(lock, grants);
    const t = timeOf(event, index.get(event)!);
    if (event.type === 'invoke') {
      invokes.set(event.proc, event);
      if (event.f !== 'release') continue;
      const owner =
        event.owner !== undefined
          ? String(event.owner)
          : (lastOwner.get(`${event.proc}\u0000${lock}`) ?? event.proc);
      const mine = grants.findLastIndex((g) => g.owner === owner);
      // Held: its grant ends with this release (Maelstrom's rule), whatever the service answers.
      const holders = mine >= 0 ? undefined : [...new Set(grants.map((g) => g.owner))];
      if (mine >= 0) grants.splice(mine, 1);
      releasing.set(event.proc, { lock, owner, at: t, holders });
      continue;
    }
    const invoke = invokes.get(event.proc);
    invokes.delete(event.proc);
    if (event.f === 'acquire' && event.type === 'ok') {
      const owner = String(event.owner ?? event.proc);
      const mode = String(invoke?.mode ?? event.mode ?? 'x');
      if (EXCLUSIVE.has(mode)) {
        for (let i = grants.length - 1; i >= 0; i--) if (grants[i]!.owner !== owner) grants.splice(i, 1);
      }
      grants.push({ owner, proc: event.proc });
      lastOwner.set(`${event.proc}\u0000${lock}`, owner);
    }
    if (event.f === 'release') {
      const release = releasing.get(event.proc);
      releasing.delete(event.proc);
      const tookEffect = event.type === 'ok' && !REFUSED_RELEASES.has(String(event.outcome));
      if (release?.holders && tookEffect) {
        violations.push({
          lock: release.lock,
          proc: event.proc,
          owner: release.owner,
          at: String(release.at),
          holders: release.holders,
        });
      }
    }
  }
  return violations;
}

/** L6: per fair lock, no waiter granted ahead of one known to be queued before its acquire began. */
function fifoOrder(
  client: readonly HistoryEvent[],
  all: readonly HistoryEvent[],
  fair: true | readonly string[],
): FifoViolation[] {
  const index = new Map(all.map((e, i) => [e, i]));
  const isFair = (lock: string) => fair === true || fair.includes(lock);
  interface Waiter {
    readonly proc: string;
    readonly lock: string;
    readonly invokedAt: bigint;
    readonly reentry: boolean;
    queuedAt?: bigint;
    /** When the store first granted it (an `offered` event): its place ends there at the latest. */
    offeredAt?: bigint;
    outcome?: 'ok' | 'gave-up' | 'killed';
    owner?: string;
    doneAt?: bigint;
  }
  const held = new Map<string, number>(); // proc+lock → holds (re-entry does not queue)
  const pending = new Map<string, Waiter>(); // proc → its acquire in progress
  const waiters: Waiter[] = [];
  for (const event of client) {
    if (isKill(event)) {
      for (const [slot, count] of held)
        if (count > 0 && slot.startsWith(`${String(event.target)}\u0000`)) held.delete(slot);
      const waiter = pending.get(String(event.target));
      if (waiter) waiter.outcome = 'killed';
      pending.delete(String(event.target));
      continue;
    }
    const lock = String(event.lock ?? 'lock');
    const slot = `${event.proc}\u0000${lock}`;
    const t = timeOf(event, index.get(event)!);
    if (event.f === 'queued') {
      const waiter = pending.get(event.proc);
      if (waiter && waiter.lock === lock && waiter.queuedAt === undefined) waiter.queuedAt = t;
    } else if (event.f === 'offered') {
      const waiter = pending.get(event.proc);
      if (waiter && waiter.lock === lock && waiter.offeredAt === undefined) waiter.offeredAt = t;
    } else if (event.f === 'acquire' && event.type === 'invoke') {
      const waiter: Waiter = { proc: event.proc, lock, invokedAt: t, reentry: (held.get(slot) ?? 0) > 0 };
      pending.set(event.proc, waiter);
      if (isFair(lock)) waiters.push(waiter);
    } else if (event.f === 'acquire') {
      const waiter = pending.get(event.proc);
      pending.delete(event.proc);
      if (!waiter) continue;
      waiter.doneAt = t;
      waiter.outcome = event.type === 'ok' ? 'ok' : 'gave-up';
      if (event.type === 'ok') {
        waiter.owner = String(event.owner ?? event.proc);
        held.set(slot, (held.get(slot) ?? 0) + 1);
      }
    } else if (event.f === 'release' && event.type === 'invoke') {
      held.set(slot, Math.max(0, (held.get(slot) ?? 0) - 1));
    } else if (event.f === 'lost' && event.type === 'ok') {
      held.delete(slot);
    }
  }
  const violations: FifoViolation[] = [];
  // Until when each queued waiter kept its place: its grant, or the end (no grant, no give-up, no
  // kill), or the store's first grant to it if one was seen. A waiter that gave up or was killed
  // keeps none.
  const heldPlace = (w: Waiter) => {
    const place = w.outcome === 'ok' ? w.doneAt! : w.outcome === undefined ? UNTIL_END : -1n;
    return w.offeredAt !== undefined && w.offeredAt < place ? w.offeredAt : place;
  };
  const byLock = new Map<string, Waiter[]>();
  for (const waiter of waiters) {
    let list = byLock.get(waiter.lock);
    if (!list) byLock.set(waiter.lock, (list = []));
    list.push(waiter);
  }
  for (const list of byLock.values()) {
    // One sweep, O(n log n) when nobody is overtaken: later waiters by when they began; the queued
    // ones known before each joins the prefix, of which only the longest-kept place matters unless it
    // outlasts the later one's grant (then the prefix is searched for every waiter it passed).
    const queued = list
      .filter((w) => w.queuedAt !== undefined && !w.reentry)
      .sort((a, b) => (a.queuedAt! < b.queuedAt! ? -1 : a.queuedAt! > b.queuedAt! ? 1 : 0));
    const granted = list
      .filter((w) => w.outcome === 'ok' && !w.reentry)
      .sort((a, b) => (a.invokedAt < b.invokedAt ? -1 : a.invokedAt > b.invokedAt ? 1 : 0));
    let known = 0;
    let longest = -1n;
    for (const later of granted) {
      for (; known < queued.length && queued[known]!.queuedAt! < later.invokedAt; known++) {
        const place = heldPlace(queued[known]!);
        if (place > longest) longest = place;
      }
      if (longest <= later.doneAt!) continue;
      for (const earlier of queued.slice(0, known)) {
        // Still waiting when the later one was granted: granted after it, or never.
        if (earlier.proc === later.proc || heldPlace(earlier) <= later.doneAt!) continue;
        violations.push({
          lock: later.lock,
          overtaken: earlier.owner ?? earlier.proc,
          by: later.owner ?? later.proc,
          queuedAt: String(earlier.queuedAt),
          invokedAt: String(later.invokedAt),
          grantedAt: String(later.doneAt),
        });
      }
    }
  }
  return violations;
}

/** Later than any time of a history: a waiter's place kept to the end. */
const UNTIL_END = 2n ** 64n;

/**
 * L7: per lock, each stretch in which some pending acquire could have been granted (the holds left
 * admit it: `exceeds`) and none was, ends within `bound` — by a grant, or by those waiters giving up.
 * A waiter is another owner than every hold (a holder's own acquire that waits is its own deadlock).
 */
function grantsWithin(
  client: readonly HistoryEvent[],
  all: readonly HistoryEvent[],
  bound: bigint,
): LivenessViolation[] {
  const index = new Map(all.map((e, i) => [e, i]));
  interface LiveHold extends Hold {
    readonly proc: string;
    readonly until: bigint | undefined;
  }
  interface Pending {
    readonly proc: string;
    readonly mode: string;
    readonly permits: number;
  }
  interface PerLock {
    holds: LiveHold[];
    pending: Map<string, Pending>;
    /** How many pending acquires of each mode (and permits): admission is judged once per kind. */
    kinds: Map<string, { mode: string; permits: number; count: number }>;
    releasing: Map<string, LiveHold>;
    since: bigint | undefined;
    /** The waiters that left (granted, gave up, killed) during the current stretch. */
    left: string[];
  }
  const locks = new Map<string, PerLock>();
  const stateOf = (lock: string): PerLock => {
    let state = locks.get(lock);
    if (!state) {
      state = {
        holds: [],
        pending: new Map(),
        kinds: new Map(),
        releasing: new Map(),
        since: undefined,
        left: [],
      };
      locks.set(lock, state);
    }
    return state;
  };
  const kindOf = (w: { mode: string; permits: number }) => `${w.mode}\u0000${w.permits}`;
  const wait = (state: PerLock, waiter: Pending) => {
    state.pending.set(waiter.proc, waiter);
    const kind = state.kinds.get(kindOf(waiter));
    if (kind) kind.count++;
    else state.kinds.set(kindOf(waiter), { mode: waiter.mode, permits: waiter.permits, count: 1 });
  };
  const leave = (state: PerLock, proc: string) => {
    const waiter = state.pending.get(proc);
    if (!waiter) return;
    state.pending.delete(proc);
    const kind = state.kinds.get(kindOf(waiter))!;
    if (--kind.count === 0) state.kinds.delete(kindOf(waiter));
    if (state.since !== undefined) state.left.push(proc);
  };
  /** Whether a waiter of this mode would fit beside the holds (as another owner than all of them). */
  const fits = (state: PerLock, kind: { mode: string; permits: number }) =>
    !exceeds([...state.holds, { lock: '', owner: '\u0000waiter', ...kind, start: 0n, end: 0n }]);
  const violations: LivenessViolation[] = [];
  /** Ends the current stretch at `t` (reporting it if too long), then starts one if a waiter can go in. */
  const settle = (
    lock: string,
    state: PerLock,
    t: bigint,
    endedBy: LivenessViolation['endedBy'] | undefined,
  ) => {
    const ready = [...state.kinds.values()].some((kind) => fits(state, kind));
    if (state.since !== undefined && (endedBy !== undefined || !ready)) {
      if (t - state.since > bound) {
        const waiting = [...state.pending.values()].filter((w) => fits(state, w)).map((w) => w.proc);
        violations.push({
          lock,
          since: String(state.since),
          waitedNs: String(t - state.since),
          endedBy: endedBy ?? 'waiters-gone',
          waiters: [...new Set([...state.left, ...waiting])],
        });
      }
      state.since = undefined;
    }
    if (state.since === undefined && ready && endedBy !== 'history-end') {
      state.since = t;
      state.left = [];
    }
  };
  /** Ends the holds whose `valid_until` passed by `t`, one moment at a time. */
  const leased = new Set<string>(); // the locks with a hold that has a valid_until: only they expire
  const expire = (t: bigint) => {
    for (const lock of leased) {
      const state = locks.get(lock)!;
      for (;;) {
        const due = state.holds.filter((h) => h.until !== undefined && h.until <= t);
        if (due.length === 0) {
          if (!state.holds.some((h) => h.until !== undefined)) leased.delete(lock);
          break;
        }
        const at = due.reduce((min, h) => (h.until! < min ? h.until! : min), due[0]!.until!);
        state.holds = state.holds.filter((h) => h.until === undefined || h.until > at);
        settle(lock, state, at, undefined);
      }
    }
  };
  const invokes = new Map<string, HistoryEvent>();
  let now = 0n;
  for (const event of client) {
    const t = timeOf(event, index.get(event)!);
    now = t;
    expire(t);
    if (isKill(event)) {
      for (const [lock, state] of locks) {
        // A dead holder's lease still runs (its valid_until, when recorded); a dead waiter waits no more.
        state.holds = state.holds.filter((h) => h.proc !== event.target || h.until !== undefined);
        leave(state, String(event.target));
        settle(lock, state, t, undefined);
      }
      continue;
    }
    if (event.f === 'queued' || event.f === 'offered') continue;
    const lock = String(event.lock ?? 'lock');
    const state = stateOf(lock);
    if (event.type === 'invoke') {
      invokes.set(event.proc, event);
      if (event.f === 'acquire') {
        wait(state, {
          proc: event.proc,
          mode: String(event.mode ?? 'x'),
          permits: Number(event.permits ?? 1),
        });
      } else if (event.f === 'release') {
        const mine = state.holds.findLastIndex((h) => h.proc === event.proc);
        if (mine >= 0) state.releasing.set(event.proc, state.holds[mine]!);
      }
      settle(lock, state, t, undefined);
      continue;
    }
    const invoke = invokes.get(event.proc);
    invokes.delete(event.proc);
    if (event.f === 'acquire') {
      leave(state, event.proc);
      if (event.type === 'ok') {
        state.holds.push({
          lock,
          proc: event.proc,
          owner: String(event.owner ?? event.proc),
          mode: String(invoke?.mode ?? event.mode ?? 'x'),
          permits: Number(invoke?.permits ?? event.permits ?? 1),
          start: t,
          end: t,
          until: event.valid_until === undefined ? undefined : BigInt(String(event.valid_until)),
        });
        if (event.valid_until !== undefined) leased.add(lock);
        settle(lock, state, t, 'grant');
        continue;
      }
    } else if (event.f === 'release') {
      const hold = state.releasing.get(event.proc);
      state.releasing.delete(event.proc);
      // Released (or not ours any more): gone. A failed or unknown release leaves it to its lease.
      if (hold && event.type === 'ok') state.holds = state.holds.filter((h) => h !== hold);
    } else if (event.f === 'lost' && event.type === 'ok') {
      state.holds = state.holds.filter((h) => h.proc !== event.proc);
    }
    settle(lock, state, t, undefined);
  }
  expire(now);
  for (const [lock, state] of locks) settle(lock, state, now, 'history-end');
  return violations;
}
