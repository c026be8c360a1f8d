import type { HistoryEvent } from './history.js';
import { isKill, timeOf } from './lock-events.js';
import type { ReleaseViolation } from './lock-report.js';

const EXCLUSIVE = new Set(['x', 'w']);
/** Release outcomes by which the service said it changed nothing (types.ts's ReleaseOutcome). */
const REFUSED_RELEASES = new Set(['not_owner', 'expired']);

/**
 * L2: a release that took effect was by a holder. The grants are the service's view, not the clients'
 * belief: a grant lives from its acquire's `ok` until its owner's release, its process's kill, or an
 * exclusive grant to another owner (the service gave the lock away, so the old hold is gone). A lost
 * hold or a passed `valid_until` ends nothing here: the service may still have kept it.
 */
export function releaseOwnership(
  client: readonly HistoryEvent[],
  all: readonly HistoryEvent[],
): ReleaseViolation[] {
  const index = new Map(all.map((e, i) => [e, i]));
  const live = new Map<string, Array<{ owner: string; proc: string }>>(); // lock → grants
  const lastOwner = new Map<string, string>(); // proc+lock → the owner of its latest grant
  const invokes = new Map<string, HistoryEvent>();
  const releasing = new Map<
    string,
    {
      lock: string;
      owner: string;
      at: bigint;
      holders: string[] | undefined;
      /** Another process's grant of the same owner, ended only if this release took effect. */
      shared: { owner: string; proc: string } | undefined;
      /** This process's grant the release ended at its invoke, given back if the service refused it. */
      own: { owner: string; proc: string } | undefined;
    }
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
      const mine = grants.findLastIndex((g) => g.owner === owner && g.proc === event.proc);
      // Held: its grant ends with this release (Maelstrom's rule) — unless the service refuses it:
      // a refused release changed nothing, and the grant it was taken for may be a re-entry's, made
      // after this handle's own hold was lost (the core answers such a release `expired` without
      // asking the service: it would end the re-entry's hold, the service releasing by owner).
      const own = mine >= 0 ? grants.splice(mine, 1)[0] : undefined;
      // Not held by this process, but by its owner through another (a re-entry taken after this
      // process's hold was lost): the service releases by owner, so that grant ends only if this
      // release took effect — a release the service refused ('expired') changed nothing of it.
      const shared = mine >= 0 ? undefined : grants.findLast((g) => g.owner === owner);
      const holders = mine >= 0 || shared ? undefined : [...new Set(grants.map((g) => g.owner))];
      releasing.set(event.proc, { lock, owner, at: t, holders, shared, own });
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
      if (release?.shared && tookEffect) {
        const shared = grants.indexOf(release.shared);
        if (shared >= 0) grants.splice(shared, 1);
      }
      if (release?.own && event.type === 'ok' && !tookEffect) grants.push(release.own);
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
