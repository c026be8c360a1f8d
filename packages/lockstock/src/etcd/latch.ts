import { Busy, monotonicNow, resolveAcquireOptions } from '../backend/index.js';
import { InvalidLockOptionError } from '../locks/errors.js';
import type { CountDownLatch } from '../locks/types.js';
import { familyKey } from './keys.js';
import type { EtcdContext } from './resource.js';
import { cmp, op, rangeAt, revisionOf } from './store.js';

const RELEASED = { value: true, more: true } as const;

/**
 * Redisson's CountDownLatch in one key without a lease (`<name>/latch`, the count as its value): a
 * count is not a hold, it outlives its clients. Counting down is compare-and-swap on the key's mod
 * revision; the last count down deletes the key, and that deletion is what every waiter watches.
 */
export class EtcdCountDownLatch implements CountDownLatch {
  readonly key: string;

  constructor(
    private readonly ctx: EtcdContext,
    readonly name: string,
  ) {
    this.key = familyKey(ctx.keyPrefix, name, 'latch');
  }

  async trySetCount(count: number): Promise<boolean> {
    if (!Number.isSafeInteger(count) || count < 1) {
      throw new InvalidLockOptionError('count', 'a positive integer', count);
    }
    this.ctx.host.assertOpen(this.name);
    const reply = await this.ctx.store.txn(
      [cmp.createdAt(this.key, 0)],
      [op.put(this.key, String(count), undefined)],
    );
    return reply.succeeded;
  }

  async countDown(): Promise<number> {
    this.ctx.host.assertOpen(this.name);
    for (;;) {
      const now = await this.ctx.store.range({ key: Buffer.from(this.key) });
      const kv = now.kvs[0];
      if (kv === undefined) return 0;
      const left = Number(kv.value.toString()) - 1;
      const write = left <= 0 ? op.delete(this.key) : op.put(this.key, String(left), undefined);
      const reply = await this.ctx.store.txn([cmp.modifiedAt(this.key, Number(kv.mod_revision))], [write]);
      if (reply.succeeded) return Math.max(0, left);
      // Another client counted down meanwhile: read again.
    }
  }

  async count(): Promise<number> {
    this.ctx.host.assertOpen(this.name);
    const now = await this.ctx.store.range({ key: Buffer.from(this.key) });
    return now.kvs[0] === undefined ? 0 : Number(now.kvs[0].value.toString());
  }

  /** Deletes the count (forceUnlock): every waiter is released. True if it was counting. */
  async clear(): Promise<boolean> {
    const reply = await this.ctx.store.txn([], [op.delete(this.key)]);
    return Number(reply.responses[0]?.response_delete_range.deleted ?? 0) > 0;
  }

  async wait(options: { waitMs?: number; signal?: AbortSignal } = {}): Promise<boolean> {
    const { waitMs, signal } = resolveAcquireOptions(options, Infinity);
    this.ctx.host.assertOpen(this.name);
    const startedAt = monotonicNow();
    if ((await this.count()) === 0) return true;
    const released = await this.ctx.host.waiters.wait<true, undefined>({
      key: this.key,
      lockName: this.name,
      channel: undefined,
      ordering: 'server-order', // every waiter looks on its own watch: all are released at zero
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

  /** Released when the key is gone; otherwise a watch on its deletion. */
  private async check(): Promise<typeof RELEASED | Busy> {
    const reply = await this.ctx.store.txn([], [op.get(this.key)]);
    if (rangeAt(reply, 0).kvs.length === 0) return RELEASED;
    const watch = this.ctx.store.watch(
      { key: this.key, from: revisionOf(reply.header) + 1, deletesOnly: true },
      () => true,
    );
    return new Busy(undefined, watch);
  }
}
