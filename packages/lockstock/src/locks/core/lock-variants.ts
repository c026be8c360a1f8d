import { backendError, InvalidLockOptionError } from '../errors.js';
import { validateOwner, validatePermits } from '../options.js';
import { currentTaskOwner } from '../owner.js';
import type { ReentrantLock, Semaphore } from '../types.js';
import type { LockResource } from './backend.js';
import type { LockCore } from './context.js';
import type { LockKind } from './kind.js';
import { CoreLock } from './lock.js';

/** A lock whose owner re-enters (reentrant, fair, spin, both sides of a read-write lock). */
export class CoreReentrantLock extends CoreLock implements ReentrantLock {
  async holdCount(owner?: string): Promise<number> {
    this.core.assertOpen(this.name);
    const who = owner === undefined ? currentTaskOwner() : validateOwner(owner);
    if (who === undefined) {
      throw new InvalidLockOptionError('owner', 'given when called outside a run() task', owner);
    }
    return (await this.resource.holdCount?.(who)) ?? 0;
  }
}

/** Up to `permits` holders at once. */
export class CoreSemaphore extends CoreLock implements Semaphore {
  constructor(
    core: LockCore,
    resource: LockResource,
    kind: LockKind,
    readonly permits: number,
  ) {
    super(core, resource, kind);
  }

  async available(): Promise<number> {
    if (this.resource.available) {
      this.core.assertOpen(this.name);
      try {
        return Math.max(0, await this.resource.available());
      } catch (error) {
        throw backendError(this.name, error);
      }
    }
    return Math.max(0, this.permits - (await this.inspect()).holders);
  }

  async setPermits(permits: number): Promise<void> {
    this.core.assertOpen(this.name);
    const count = validatePermits(permits);
    if (!this.resource.setPermits) {
      throw new InvalidLockOptionError('permits', 'left as configured: this backend keeps no count', permits);
    }
    try {
      await this.resource.setPermits(count);
    } catch (error) {
      throw backendError(this.name, error);
    }
  }
}
