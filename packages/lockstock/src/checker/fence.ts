import type { HistoryEvent } from './history.js';
import { timeOf } from './lock-events.js';
import type { FenceViolation } from './lock-report.js';

/** L4 at the resource, in the order it decided: accepted writes never stale, refusals never needless. */
export function fenceSafety(events: readonly HistoryEvent[]) {
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
