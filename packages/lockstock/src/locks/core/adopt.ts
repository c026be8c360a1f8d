import { backendError, InvalidLockOptionError, NotLockOwnerError } from '../errors.js';
import { validateAdoptOptions, validateOwner } from '../options.js';
import type { AdoptOptions } from '../types.js';
import type { ExtendStatus, LockResource } from './backend.js';
import type { LockCore } from './context.js';
import type { LockKind } from './kind.js';
import { monotonicNow } from './lease.js';

/** A hold another process took, proven still `owner`'s: what its Hold is built from. */
export interface AdoptedHold {
  readonly fencingToken: number;
  readonly leaseMs: number;
  /** No lease was given: the watchdog renews it. */
  readonly renewed: boolean;
  /** When the proving extend was sent: the lease is trusted from then. */
  readonly requestedAt: number;
}

/**
 * `Lock.adopt`'s check: one extend on the backend proves `owner` still holds the lock, and starts the
 * lease the adopted hold gets (the given one, or the watchdog's). Only holds with a lease can be
 * adopted: a session's holds cannot move to another process.
 */
export async function proveHold(
  core: LockCore,
  resource: LockResource,
  kind: LockKind,
  owner: string,
  options: AdoptOptions,
): Promise<AdoptedHold> {
  core.assertOpen(resource.name);
  validateOwner(owner);
  const { fencingToken, leaseMs } = validateAdoptOptions(options);
  if (resource.leases === 'none') {
    throw new InvalidLockOptionError(
      'owner',
      `the owner of a hold with a lease (a ${kind.name}'s holds end with their backend session, or have no owner)`,
      owner,
    );
  }
  const renewed = leaseMs === undefined;
  const lease = leaseMs ?? core.watchdog.timeoutMs;
  const requestedAt = monotonicNow();
  let status: ExtendStatus;
  try {
    status = await resource.extend(owner, lease);
  } catch (error) {
    throw backendError(resource.name, error);
  }
  if (status !== 'extended') {
    const why = status === 'taken' ? 'another owner holds the lock now' : 'the hold has ended';
    throw new NotLockOwnerError(resource.name, owner, why);
  }
  return { fencingToken, leaseMs: lease, renewed, requestedAt };
}
