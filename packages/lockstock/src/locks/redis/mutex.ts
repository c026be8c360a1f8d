import { newOwnerId } from '../owner.js';
import { RedisLock } from './base.js';
import type { RedisLockContext } from './context.js';
import { mutexScripts } from './scripts.js';

/**
 * A non-reentrant mutex: `SET key owner NX PX lease` plus a fencing token, in one script. Every
 * acquire is a new owner unless `owner` is given, so acquiring it twice from the same task waits for
 * the first hold (as a mutex should).
 */
export class RedisMutex extends RedisLock {
  constructor(ctx: RedisLockContext, name: string) {
    super(ctx, name, mutexScripts);
  }

  protected defaultOwner(): string {
    return newOwnerId();
  }
}
