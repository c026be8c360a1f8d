import { runInTask } from './owner.js';
import type { CriticalSection, LockHandle, RunOptions } from './types.js';

/**
 * `Lock.run` for every backend: acquire inside a task context (so reentrant locks re-enter within
 * `fn`), run `fn`, release. If the lock was lost while `fn` ran, `run` rejects with the LockLostError
 * even when `fn` succeeded. If `fn` throws, its error wins and a failing release goes to
 * `onReleaseError` (the lease still ends on its own).
 */
export function runLocked<T>(
  acquire: (options: RunOptions | undefined) => Promise<LockHandle>,
  fn: CriticalSection<T>,
  options: RunOptions | undefined,
  onReleaseError: (error: unknown) => void,
): Promise<T> {
  return runInTask(async () => {
    const handle = await acquire(options);
    let result: T;
    try {
      result = await fn(handle.signal, handle);
    } catch (error) {
      await handle.release().catch(onReleaseError);
      throw error;
    }
    await handle.release();
    if (handle.lostError) throw handle.lostError;
    return result;
  });
}
