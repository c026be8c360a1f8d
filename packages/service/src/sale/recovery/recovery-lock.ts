import type { Lock, LockHandle } from 'lockstock';
import type { Logger } from '../logger.js';

/**
 * Runs `rebuild` under a sale's (or a part's) recovery lock if this process gets it at once:
 * undefined when another process holds it (it is rebuilding). The lock is given back afterwards
 * whatever happened; a failed release is logged, since the rebuild's own outcome is what the caller
 * acts on (the lease ends the lock anyway).
 */
export async function underRecoveryLock<T>(
  lock: Lock,
  logger: Logger,
  saleId: string,
  rebuild: (handle: LockHandle, token: string) => Promise<T | undefined>,
): Promise<T | undefined> {
  const handle = await lock.tryAcquire();
  if (!handle) return undefined;
  try {
    // The rebuild's flag in Redis names its holder: the owner and the lock's fencing token.
    return await rebuild(handle, `${handle.owner}:${handle.fencingToken}`);
  } finally {
    await handle
      .release()
      .catch((error: unknown) => logger.warn({ err: error, saleId }, 'could not release the recovery lock'));
  }
}
