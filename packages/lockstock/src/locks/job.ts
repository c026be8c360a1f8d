import { InvalidLockOptionError } from './errors.js';
import { validateMinHoldMs } from './options.js';
import type { Lock, RunOptions } from './types.js';

/** Options of `runJob`: the acquire's (without waiting: a held lock is a skip) and the minimum hold. */
export interface JobOptions extends Omit<RunOptions, 'waitMs' | 'signal'> {
  /**
   * Keep the lock at least this long after it was granted, however fast the job is (ShedLock's
   * `lockAtLeastFor`), so that a node whose clock or schedule runs late does not run the job a
   * second time in the same window: on release the hold's lease is shortened to what is left of it
   * and the store ends it on its own clock (a session-held lock is released when it is over).
   * @default 0
   */
  minHoldMs?: number;
}

/** What `runJob` did: ran the job (with its result and fencing token), or skipped it. */
export type JobResult<T> =
  | { readonly ran: true; readonly value: T; readonly fencingToken: number }
  | { readonly ran: false; readonly skipped: 'held' };

/** The job a `runJob` call runs: its fencing token for the writes it makes, and the hold's signal. */
export type Job<T> = (fencingToken: number, signal: AbortSignal) => Promise<T> | T;

const SKIPPED: JobResult<never> = Object.freeze({ ran: false, skipped: 'held' });

/**
 * Runs `job` at most once across every process sharing the lock (ShedLock's model): if anyone holds
 * the lock — another node running it, or a run that ended less than `minHoldMs` ago — it resolves to
 * `{ ran: false, skipped: 'held' }` without waiting; otherwise it runs `job` with the hold's fencing
 * token, then releases, keeping the lock until `minHoldMs` after the grant even when `job` throws.
 * Rejects with `job`'s error, or with the LockLostError if the lock was lost while `job` ran.
 */
export async function runJob<T>(lock: Lock, job: Job<T>, options: JobOptions = {}): Promise<JobResult<T>> {
  const { minHoldMs = 0, ...acquire } = options;
  validateMinHoldMs(minHoldMs);
  if ('waitMs' in acquire || 'signal' in acquire) {
    throw new InvalidLockOptionError(
      'waitMs',
      'left out: a job never waits (a held lock is a skip)',
      acquire,
    );
  }
  const handle = await lock.tryAcquire(acquire);
  if (handle === undefined) return SKIPPED;
  let value: T;
  try {
    value = await job(handle.fencingToken, handle.signal);
  } catch (error) {
    await handle.release({ minHoldMs }).catch(() => undefined); // the job's error is the one to see
    throw error;
  }
  await handle.release({ minHoldMs });
  if (handle.lostError) throw handle.lostError;
  return { ran: true, value, fencingToken: handle.fencingToken };
}
