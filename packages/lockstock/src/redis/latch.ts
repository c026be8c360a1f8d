import type { LatchResource } from '../backend/index.js';
import type { RedisLockContext } from './context.js';
import { RedisResource } from './resource.js';
import { LOCK_SCRIPTS } from './lock-scripts.js';

/**
 * Redisson's CountDownLatch: an integer counted down to zero; the last countDown deletes it and
 * publishes, which wakes every waiter of every client (they wait in the core's wait loop, each
 * reading the count when woken).
 */
export class RedisLatch extends RedisResource implements LatchResource {
  readonly wakeChannel: string;
  readonly holderKeys: readonly string[];
  private readonly key: string;

  constructor(ctx: RedisLockContext, name: string) {
    super(ctx, name);
    this.key = `${this.base}:latch`;
    this.wakeChannel = `${this.key}:wake`;
    this.holderKeys = [this.key];
  }

  async trySetCount(count: number): Promise<boolean> {
    return (await this.run(LOCK_SCRIPTS.latchSet, [this.key], [count])) === 1;
  }

  async countDown(): Promise<number> {
    return Number(await this.run(LOCK_SCRIPTS.latchCountDown, [this.key, this.wakeChannel], []));
  }

  async count(): Promise<number> {
    return Number((await this.ctx.client.get(this.key)) ?? 0);
  }
}
