import type { IEvent, IRangeResponse } from 'etcd3';
import {
  type AttemptRequest,
  type AttemptResult,
  type LockInfo,
  type LockResource,
  type ReleaseResult,
} from '../backend/index.js';
import { PermitsMismatchError } from '../locks/errors.js';
import { familyKey } from './keys.js';
import type { OwnedKey } from './owned.js';
import { BUSY, EtcdResource, EXPIRED, isDelete, type EtcdContext } from './resource.js';
import { cmp, createdAt, keyOf, op, rangeAt, rangeByCreation, revisionOf } from './store.js';
import { holderOf } from './value.js';

/**
 * N permits as one queue: the first N keys by create revision hold one each (a waiter holds when
 * fewer than N keys precede it), each on its session's lease — a dead holder's permit comes back with
 * its session. The permit count is stored beside the queue (`<name>/semaphore/permits`, no lease) by
 * the first acquire: a client made with another count fails with PermitsMismatchError.
 *
 * A waiter cannot watch one key: any of the N holders' releases may let it in. It watches the
 * semaphore's directory and counts the deletions of keys older than its own down from how many were
 * ahead of it; it looks again only when fewer than N are left ahead — so a release still wakes only
 * the waiter it admits (every waiter receives the event; only that one makes a request).
 */
export class SemaphoreResource extends EtcdResource implements LockResource {
  readonly ordering = 'server-order' as const;
  private readonly root: string;
  private readonly permitsKey: string;

  constructor(
    ctx: EtcdContext,
    name: string,
    readonly permits: number,
  ) {
    const root = familyKey(ctx.keyPrefix, name, 'semaphore');
    super(ctx, name, `${root}/q/`);
    this.root = `${root}/`;
    this.permitsKey = `${root}/permits`;
  }

  protected async attemptOn({ owner, waiting, holder }: AttemptRequest): Promise<AttemptResult> {
    const mine = this.mine(owner);
    const session = await this.ctx.session();
    if (mine?.held) {
      // One permit per owner: an owner holding one waits for its own release, as on other backends.
      return waiting ? this.waitForDeletion(session, mine.key, mine.revision + 1) : BUSY;
    }
    const { entry, ranges, created } = await this.enqueue(
      session,
      owner,
      mine,
      ['', holder],
      [
        op.byCreation(this.dir, 'Ascend', this.permits, { keysOnly: true }),
        op.get(this.permitsKey),
        op.count(this.dir),
      ],
    );
    const [holders, stored, all] = ranges as [IRangeResponse, IRangeResponse, IRangeResponse];
    await this.checkPermits(entry, stored);
    if (holders.kvs.some((kv) => keyOf(kv) === entry.key)) return this.grant(entry, 'holds', true);
    if (!waiting) return this.withdraw(entry);
    // Just put, the key is the newest: every other key is ahead of it. Otherwise count them (etcd's
    // count ignores revision filters: the keys themselves).
    let ahead = Number(all.count) - 1;
    let from = revisionOf(all.header) + 1;
    if (!created) {
      const before = await this.ctx.store.range(
        rangeByCreation(this.dir, 'Ascend', 0, { keysOnly: true, createdBefore: entry.revision }),
      );
      ahead = before.kvs.length;
      from = revisionOf(before.header) + 1;
    }
    if (ahead < this.permits) return this.grant(entry, 'holds', true);
    const fires = (event: IEvent) => {
      const key = keyOf(event.kv);
      if (key === this.permitsKey) return true; // a new count: look again
      if (!isDelete(event) || !key.startsWith(this.dir)) return false;
      // Without the deleted key's revision (etcd could not read it): look again, to be safe.
      if (event.prev_kv === undefined || event.prev_kv === null) return true;
      if (createdAt(event.prev_kv) < entry.revision) ahead--;
      return ahead < this.permits;
    };
    return this.waitOn(session, { key: this.root, prefix: true, from, previous: true }, fires);
  }

  /** The stored count must be ours; the first acquire stores it. */
  private async checkPermits(entry: OwnedKey, stored: IRangeResponse): Promise<void> {
    let count = stored.kvs[0] === undefined ? undefined : Number(stored.kvs[0].value.toString());
    if (count === undefined) {
      const reply = await this.ctx.store.txn(
        [cmp.createdAt(this.permitsKey, 0)],
        [op.put(this.permitsKey, String(this.permits), undefined)],
        [op.get(this.permitsKey)],
      );
      const kv = reply.succeeded ? undefined : rangeAt(reply, 0).kvs[0];
      count = kv === undefined ? this.permits : Number(kv.value.toString());
    }
    if (count === this.permits) return;
    await this.withdraw(entry);
    throw new PermitsMismatchError(this.name, this.permits, count);
  }

  async release(owner: string): Promise<ReleaseResult> {
    const mine = this.ctx.owned.get(this.dir, owner);
    if (!mine?.held) return EXPIRED;
    return this.deleteKey(mine);
  }

  async extend(): Promise<'expired'> {
    return 'expired'; // never asked: holds have no lease of their own
  }

  /** The first N keys hold (each named in heldBy); the longest time to live among their leases. */
  async inspect(): Promise<LockInfo> {
    const range = await this.ctx.store.range(rangeByCreation(this.dir, 'Ascend', this.permits));
    if (range.kvs.length === 0)
      return { held: false, holders: 0, remainingMs: undefined, heldBy: [], waiting: 0 };
    const remainingMs = await this.ctx.store.remainingMs(range.kvs.map((kv) => kv.lease));
    const heldBy = range.kvs.map((kv) => holderOf(this.dir, kv));
    // `count` is every key of the range, the limit aside: the holders' and each waiter's.
    const waiting = Number(range.count) - range.kvs.length;
    return { held: true, holders: range.kvs.length, remainingMs, heldBy, waiting };
  }

  /** Stores a new count for every client; waiters watch it and look again. */
  async setPermits(permits: number): Promise<void> {
    await this.ctx.store.txn([], [op.put(this.permitsKey, String(permits), undefined)]);
  }
}
