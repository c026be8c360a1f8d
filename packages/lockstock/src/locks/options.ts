import { MAX_TIMER_MS } from '../support/timer.js';
import { InvalidLockOptionError } from './errors.js';
import type { AcquireOptions } from './types.js';

/**
 * Longest lease or wait we accept as a finite number: the longest a Node timer waits (a longer delay
 * fires after 1 ms), and the client times every lease's end and every wait's deadline with one.
 */
export const MAX_DURATION_MS = MAX_TIMER_MS;

/** Why durations stop at MAX_DURATION_MS, for the errors (node-redlock users pass longer leases). */
const DURATION_LIMIT =
  'about 24.8 days, the longest a Node timer waits: the client ends a lease (its signal) and a wait by one; ' +
  'for longer holds leave leaseMs out and let the watchdog renew';

/** The shortest lease: shorter ones would end before a round trip to most stores. */
export const MIN_LEASE_MS = 10;

/** Checks `minHoldMs` (release, runJob): an integer from 0 to MAX_DURATION_MS. */
export function validateMinHoldMs(value: unknown): number {
  if (typeof value !== 'number' || !Number.isInteger(value) || value < 0 || value > MAX_DURATION_MS) {
    throw new InvalidLockOptionError(
      'minHoldMs',
      `an integer number of milliseconds from 0 to ${MAX_DURATION_MS} (${DURATION_LIMIT})`,
      value,
    );
  }
  return value;
}

/**
 * Checks a lease in ms (`option` names it in the error): an integer from 10 to MAX_DURATION_MS.
 * Returns it; throws InvalidLockOptionError otherwise.
 */
export function validateLeaseMs(value: unknown, option = 'leaseMs'): number {
  if (
    typeof value !== 'number' ||
    !Number.isInteger(value) ||
    value < MIN_LEASE_MS ||
    value > MAX_DURATION_MS
  ) {
    throw new InvalidLockOptionError(
      option,
      `an integer number of milliseconds from 10 to ${MAX_DURATION_MS} (${DURATION_LIMIT})`,
      value,
    );
  }
  return value;
}

/**
 * Checks a wait in ms (`option` names it in the error): from 0 to MAX_DURATION_MS, or Infinity.
 * Returns it; throws InvalidLockOptionError otherwise.
 */
export function validateWaitMs(value: unknown, option = 'waitMs'): number {
  if (value === Infinity) return Infinity;
  if (typeof value !== 'number' || !Number.isFinite(value) || value < 0 || value > MAX_DURATION_MS) {
    throw new InvalidLockOptionError(
      option,
      `a number of milliseconds from 0 to ${MAX_DURATION_MS} (${DURATION_LIMIT}), or Infinity`,
      value,
    );
  }
  return value;
}

/**
 * Checks an owner id (AcquireOptions' `owner`, `adopt()`'s) and returns it: a non-empty string of at
 * most 256 characters, not starting with NUL (reserved for the markers scripts store in lock keys).
 * Throws InvalidLockOptionError otherwise.
 */
export function validateOwner(value: unknown): string {
  if (typeof value !== 'string' || value.length === 0 || value.length > 256 || value.startsWith('\0')) {
    // A leading NUL is reserved for the turn markers the scripts store in lock keys.
    throw new InvalidLockOptionError('owner', 'a non-empty string of at most 256 characters', value);
  }
  return value;
}

/** Checks a semaphore's permit count and returns it; throws InvalidLockOptionError otherwise. */
export function validatePermits(permits: unknown): number {
  if (typeof permits !== 'number' || !Number.isSafeInteger(permits) || permits < 1) {
    throw new InvalidLockOptionError('permits', 'a positive integer', permits);
  }
  return permits;
}

/** `Lock.adopt`'s options, checked: a fencing token and an optional lease. */
export function validateAdoptOptions(options: unknown): {
  fencingToken: number;
  leaseMs: number | undefined;
} {
  if (typeof options !== 'object' || options === null) {
    throw new InvalidLockOptionError('options', 'an object with the fencingToken of the hold', options);
  }
  const { fencingToken, leaseMs, ...rest } = options as Record<string, unknown>;
  const unknown = Object.keys(rest)[0];
  if (unknown !== undefined)
    throw new InvalidLockOptionError(unknown, 'one of fencingToken, leaseMs', unknown);
  if (typeof fencingToken !== 'number' || !Number.isSafeInteger(fencingToken) || fencingToken < 0) {
    throw new InvalidLockOptionError('fencingToken', 'the hold’s token, an integer >= 0', fencingToken);
  }
  return { fencingToken, leaseMs: leaseMs === undefined ? undefined : validateLeaseMs(leaseMs) };
}

/** A hold's budget: how long it may be held before it is reported (and, with 'abort', aborted). */
export interface HoldBudget {
  readonly ms: number;
  readonly action: 'warn' | 'abort';
}

/** AcquireOptions checked, with their defaults filled in (see resolveAcquireOptions). */
export interface ResolvedAcquireOptions {
  leaseMs: number | undefined;
  waitMs: number;
  signal: AbortSignal | undefined;
  owner: string | undefined;
  budget: HoldBudget | undefined;
  /** The `label` option: stored with the hold as holder metadata. */
  label: string | undefined;
  /** The trace id an acquire-channel subscriber gave (AcquireMessage.traceId), for the holder metadata. */
  traceId: string | undefined;
  /** Where the acquire was called, when the client captures stacks (`acquireStacks`). */
  acquiredAt?: { readonly stack?: string };
}

const KNOWN = new Set(['leaseMs', 'waitMs', 'signal', 'owner', 'holdBudgetMs', 'onBudget', 'label']);
const KNOWN_LIST = 'one of leaseMs, waitMs, signal, owner, holdBudgetMs, onBudget, label';

/** Longest `label`: it is stored with every hold that has one, and shown by inspect(). */
export const MAX_LABEL_LENGTH = 64;

/** Checks the `label` acquire option: 1 to 64 characters, no control characters (it is shown in reports). */
function validateLabel(value: unknown): string {
  if (
    typeof value !== 'string' ||
    value.length === 0 ||
    value.length > MAX_LABEL_LENGTH ||
    // eslint-disable-next-line no-control-regex
    /[\u0000-\u001f\u007f]/.test(value)
  ) {
    throw new InvalidLockOptionError(
      'label',
      `a string of 1 to ${MAX_LABEL_LENGTH} characters without control characters`,
      value,
    );
  }
  return value;
}

function resolveBudget(ms: unknown, action: unknown): HoldBudget | undefined {
  if (ms === undefined) {
    if (action !== undefined)
      throw new InvalidLockOptionError('onBudget', 'left out without holdBudgetMs', action);
    return undefined;
  }
  if (typeof ms !== 'number' || !Number.isInteger(ms) || ms < 1 || ms > MAX_DURATION_MS) {
    throw new InvalidLockOptionError(
      'holdBudgetMs',
      `an integer number of milliseconds from 1 to ${MAX_DURATION_MS}`,
      ms,
    );
  }
  if (action !== undefined && action !== 'warn' && action !== 'abort') {
    throw new InvalidLockOptionError('onBudget', "'warn' or 'abort'", action);
  }
  return { ms, action: action ?? 'warn' };
}

/** Validates acquire options (unknown keys are mistakes worth reporting, e.g. `lease` for `leaseMs`). */
export function resolveAcquireOptions(
  options: AcquireOptions | undefined,
  defaultWaitMs: number,
): ResolvedAcquireOptions {
  if (options === undefined) {
    return {
      leaseMs: undefined,
      waitMs: defaultWaitMs,
      signal: undefined,
      owner: undefined,
      budget: undefined,
      label: undefined,
      traceId: undefined,
    };
  }
  if (typeof options !== 'object' || options === null) {
    throw new InvalidLockOptionError('options', 'an object', options);
  }
  for (const key of Object.keys(options)) {
    if (!KNOWN.has(key)) throw new InvalidLockOptionError(key, KNOWN_LIST, key);
  }
  const { leaseMs, waitMs, signal, owner, holdBudgetMs, onBudget, label } = options;
  if (signal !== undefined && !(signal instanceof AbortSignal)) {
    throw new InvalidLockOptionError('signal', 'an AbortSignal', signal);
  }
  return {
    leaseMs: leaseMs === undefined ? undefined : validateLeaseMs(leaseMs),
    waitMs: waitMs === undefined ? defaultWaitMs : validateWaitMs(waitMs),
    signal,
    owner: owner === undefined ? undefined : validateOwner(owner),
    budget: resolveBudget(holdBudgetMs, onBudget),
    label: label === undefined ? undefined : validateLabel(label),
    traceId: undefined,
  };
}
