import { type ExtendStatus, type ReleaseResult } from '../backend/index.js';

/**
 * The one mapping from the integer codes our release/extend scripts return (see their headers) to
 * outcomes. Release: n > 0 holds left, 0 released, -1 no hold, -2 another owner.
 * Extend: 1 extended, -1 no hold, -2 another owner.
 */
const RELEASE: Record<string, ReleaseResult> = {
  still_held: Object.freeze({ outcome: 'still_held' }),
  released: Object.freeze({ outcome: 'released' }),
  expired: Object.freeze({ outcome: 'expired' }),
  not_owner: Object.freeze({ outcome: 'not_owner' }),
};

export function releaseResult(code: unknown): ReleaseResult {
  const n = Number(code);
  if (n > 0) return RELEASE.still_held!;
  if (n === 0) return RELEASE.released!;
  if (n === -1) return RELEASE.expired!;
  if (n === -2) return RELEASE.not_owner!;
  throw new Error(`unexpected release script reply: ${String(code)}`);
}

export function extendStatus(code: unknown): ExtendStatus {
  const n = Number(code);
  if (n === 1) return 'extended';
  if (n === -1) return 'expired';
  if (n === -2) return 'taken';
  throw new Error(`unexpected extend script reply: ${String(code)}`);
}
