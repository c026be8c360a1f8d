import type { ExtendStatus } from '../handle.js';
import type { ReleaseOutcome } from '../types.js';

/**
 * The one mapping from the integer codes our release/extend scripts return (see their headers) to
 * outcomes. Release: n > 0 holds left, 0 released, -1 no lock, -2 another owner.
 * Extend: 1 extended, -1 no lock, -2 another owner.
 */
export function releaseOutcome(code: unknown): ReleaseOutcome {
  const n = Number(code);
  if (n > 0) return 'still_held';
  if (n === 0) return 'released';
  if (n === -1) return 'expired';
  if (n === -2) return 'not_owner';
  throw new Error(`unexpected release script reply: ${String(code)}`);
}

export function extendStatus(code: unknown): ExtendStatus {
  const n = Number(code);
  if (n === 1) return 'extended';
  if (n === -1) return 'expired';
  if (n === -2) return 'taken';
  throw new Error(`unexpected extend script reply: ${String(code)}`);
}
