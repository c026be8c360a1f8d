import type { LatchResource, Watch } from '../backend/index.js';
import { familyKey } from './keys.js';
import type { EtcdContext } from './resource.js';
import { cmp, op, rangeAt, revisionOf } from './store.js';

/**
 * Redisson's CountDownLatch in one key without a lease (`<name>/latch`, the count as its value): a
 * count is not a hold, it outlives its clients. Counting down is compare-and-swap on the key's mod
 * revision; the last count down deletes the key, and that deletion is what every waiter watches
 * (watchCount; the core's wait loop sleeps on it).
 */
export class EtcdLatch implements LatchResource {
  readonly key: string;
  readonly wakeChannel = undefined; // waiters watch the key's deletion (watchCount)

  constructor(
    private readonly ctx: EtcdContext,
    readonly name: string,
  ) {
    this.key = familyKey(ctx.keyPrefix, name, 'latch');
  }

  async trySetCount(count: number): Promise<boolean> {
    const reply = await this.ctx.store.txn(
      [cmp.createdAt(this.key, 0)],
      [op.put(this.key, String(count), undefined)],
    );
    return reply.succeeded;
  }

  async countDown(): Promise<number> {
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
    const now = await this.ctx.store.range({ key: Buffer.from(this.key) });
    return now.kvs[0] === undefined ? 0 : Number(now.kvs[0].value.toString());
  }

  /** Deletes the count (forceUnlock): every waiter is released. True if it was counting. */
  async clear(): Promise<boolean> {
    const reply = await this.ctx.store.txn([], [op.delete(this.key)]);
    return Number(reply.responses[0]?.response_delete_range.deleted ?? 0) > 0;
  }

  /** Undefined when the key is gone (released); otherwise a watch on its deletion. */
  async watchCount(): Promise<Watch | undefined> {
    const reply = await this.ctx.store.txn([], [op.get(this.key)]);
    if (rangeAt(reply, 0).kvs.length === 0) return undefined;
    return this.ctx.store.watch(
      { key: this.key, from: revisionOf(reply.header) + 1, deletesOnly: true },
      () => true,
    );
  }
}
