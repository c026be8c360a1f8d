import { InvalidLockOptionError } from '../errors.js';
import { validateOwner } from '../options.js';
import { currentTaskOwner, newOwnerId } from '../owner.js';
import type { ReentrantLock } from '../types.js';
import { RedisLock } from './base.js';
import type { RedisLockContext } from './context.js';
import { reentrantScripts } from './scripts.js';

/**
 * A reentrant lock with Redisson's layout (hash {owner: hold count}). The owner is the current
 * `run()` task (see owner.ts) or an explicit `owner`; acquiring again under the same owner increments
 * the count, each release decrements it, and the last one frees the lock and wakes waiters.
 */
export class RedisReentrantLock extends RedisLock implements ReentrantLock {
  constructor(ctx: RedisLockContext, name: string) {
    super(ctx, name, reentrantScripts);
  }

  protected defaultOwner(): string {
    return currentTaskOwner() ?? newOwnerId();
  }

  async holdCount(owner?: string): Promise<number> {
    this.ctx.assertOpen(this.name);
    const who = owner === undefined ? currentTaskOwner() : validateOwner(owner);
    if (who === undefined) {
      throw new InvalidLockOptionError('owner', 'given when called outside a run() task', owner);
    }
    return Number((await this.ctx.client.hget(this.keys.lock, who)) ?? 0);
  }
}
