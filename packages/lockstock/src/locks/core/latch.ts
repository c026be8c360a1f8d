import { InvalidLockOptionError } from '../errors.js';
import { resolveAcquireOptions } from '../options.js';
import type { CountDownLatch } from '../types.js';
import { Busy, type LatchResource } from './backend.js';
import type { LockCore } from './context.js';
import { monotonicNow } from './lease.js';

/** What a latch waiter wins: the count reached zero; every other waiter may pass too. */
const RELEASED = { value: true, more: true } as const;

/**
 * A count-down latch over a backend's LatchResource: the count lives in the store, the waiting here,
 * in the client's one wait loop. Every waiter reads the count on each wake-up (or when its watch
 * fires) and all pass at zero, so the room is 'server-order': a wake-up is for everyone, and no waiter
 * hands the latch on to the next.
 */
export class CoreLatch implements CountDownLatch {
  readonly name: string;
  /** The waiters' room: apart from every lock's, whatever keys the backend uses. */
  private readonly waitKey: string;

  constructor(
    private readonly core: LockCore,
    readonly resource: LatchResource,
  ) {
    this.name = resource.name;
    this.waitKey = `\0latch\0${resource.name}`;
  }

  async trySetCount(count: number): Promise<boolean> {
    if (!Number.isSafeInteger(count) || count < 1) {
      throw new InvalidLockOptionError('count', 'a positive integer', count);
    }
    this.core.assertOpen(this.name);
    return this.resource.trySetCount(count);
  }

  async countDown(): Promise<number> {
    this.core.assertOpen(this.name);
    return this.resource.countDown();
  }

  async count(): Promise<number> {
    this.core.assertOpen(this.name);
    return this.resource.count();
  }

  async wait(options: { waitMs?: number; signal?: AbortSignal } = {}): Promise<boolean> {
    const { waitMs, signal } = resolveAcquireOptions(options, Infinity);
    this.core.assertOpen(this.name);
    const startedAt = monotonicNow();
    if ((await this.resource.count()) === 0) return true;
    const released = await this.core.waiters.wait<true, undefined>({
      key: this.waitKey,
      lockName: this.name,
      channel: this.resource.wakeChannel,
      ordering: 'server-order', // every waiter checks on each wake-up: all are released at zero
      owner: '',
      ticket: undefined,
      attempt: () => this.check(),
      deadline: waitMs === Infinity ? Infinity : startedAt + waitMs,
      signal,
      abandon: () => undefined,
      heldUntil: () => Infinity,
      leave: () => undefined,
    });
    return released === true;
  }

  /** Released at zero; else refused until a wake-up, the store's watch, or a back-off. */
  private async check(): Promise<typeof RELEASED | Busy> {
    if (this.resource.watchCount) {
      const watch = await this.resource.watchCount();
      return watch === undefined ? RELEASED : new Busy(undefined, watch);
    }
    return (await this.resource.count()) === 0 ? RELEASED : new Busy(undefined);
  }
}
