import { InvalidLockOptionError } from '../locks/errors.js';
import { Busy, monotonicNow, resolveAcquireOptions } from '../backend/index.js';
import type { CountDownLatch } from '../locks/types.js';
import type { RedisLockContext } from './context.js';
import { RedisResource } from './resource.js';
import { LOCK_SCRIPTS } from './lock-scripts.js';

const RELEASED = { value: true, more: true } as const;

/**
 * Redisson's CountDownLatch: an integer counted down to zero; the last countDown deletes it and
 * publishes, which wakes every waiter of every client (they wait in the shared wait loop, each
 * checking the count when woken).
 */
export class RedisCountDownLatch extends RedisResource implements CountDownLatch {
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
    if (!Number.isSafeInteger(count) || count < 1) {
      throw new InvalidLockOptionError('count', 'a positive integer', count);
    }
    this.ctx.core.assertOpen(this.name);
    return (await this.run(LOCK_SCRIPTS.latchSet, [this.key], [count])) === 1;
  }

  async countDown(): Promise<number> {
    this.ctx.core.assertOpen(this.name);
    return Number(await this.run(LOCK_SCRIPTS.latchCountDown, [this.key, this.wakeChannel], []));
  }

  async count(): Promise<number> {
    this.ctx.core.assertOpen(this.name);
    return Number((await this.ctx.client.get(this.key)) ?? 0);
  }

  async wait(options: { waitMs?: number; signal?: AbortSignal } = {}): Promise<boolean> {
    const { waitMs, signal } = resolveAcquireOptions(options, Infinity);
    this.ctx.core.assertOpen(this.name);
    const startedAt = monotonicNow();
    if ((await this.count()) === 0) return true;
    const released = await this.ctx.core.waiters.wait<true, undefined>({
      key: this.key,
      lockName: this.name,
      channel: this.wakeChannel,
      ordering: 'server-order', // every waiter checks on each wake-up: all are released at zero
      owner: '',
      ticket: undefined,
      attempt: async () => ((await this.count()) === 0 ? RELEASED : new Busy(undefined)),
      deadline: waitMs === Infinity ? Infinity : startedAt + waitMs,
      signal,
      abandon: () => undefined,
      heldUntil: () => Infinity,
      leave: () => undefined,
    });
    return released === true;
  }
}
