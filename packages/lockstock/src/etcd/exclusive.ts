import {
  type AttemptRequest,
  type AttemptResult,
  type HolderMetadata,
  type LockInfo,
  type LockResource,
  type ReleaseResult,
} from '../backend/index.js';
import { queueDir, type Family } from './keys.js';
import type { OwnedKey } from './owned.js';
import { BUSY, EtcdResource, EXPIRED, STILL_HELD, type EtcdContext } from './resource.js';
import type { EtcdSession } from './session.js';
import { keyOf, op, rangeByCreation, revisionOf } from './store.js';
import { holderOf, type KeyMode } from './value.js';

export interface ExclusiveOptions {
  /** The same owner acquiring again adds a hold on its key (and gets its token). */
  readonly reentrant: boolean;
  /**
   * Waiters put their key in the queue and watch the one before it. A spin lock's do not: they try
   * while the queue is empty and back off otherwise (no watch per waiter, for very many locks).
   */
  readonly queues: boolean;
  /** A waiter whose session ended: queue again ('requeue'), or fail with LockLostError ('reject'). */
  readonly staleWaiter: 'requeue' | 'reject';
  /** The mode the key's value starts with ('w' for the write side of a read-write lock; value.ts). */
  readonly mode: KeyMode;
}

/**
 * etcd's Mutex (client/v3/concurrency): every waiter puts `<dir><lease>/<owner>` on its session's
 * lease; the key with the lowest create revision holds, and that revision is its fencing token. A
 * waiter watches only the deletion of the key just before its own (no herd: a release wakes one
 * waiter), and looks again when it fires. A queue in revision order is fair by construction: mutex,
 * reentrant and fair locks (and elections) are this one resource.
 */
export class ExclusiveResource extends EtcdResource implements LockResource {
  readonly ordering: 'server-order' | undefined;

  constructor(
    ctx: EtcdContext,
    name: string,
    family: Family,
    protected readonly options: ExclusiveOptions,
  ) {
    super(ctx, name, queueDir(ctx.keyPrefix, name, family));
    // A spin lock's waiters do not queue in etcd: this client's wait queue orders them (local FIFO).
    this.ordering = options.queues ? 'server-order' : undefined;
  }

  protected async attemptOn({ owner, waiting, holder }: AttemptRequest): Promise<AttemptResult> {
    const mine = this.mine(owner, this.options.staleWaiter);
    const session = await this.ctx.session();
    if (mine?.held) {
      const entered = await this.reenter(mine, waiting);
      if (entered !== undefined) return entered;
    }
    if (!waiting || !this.options.queues) {
      const taken = await this.take(session, owner, [this.options.mode, holder]);
      return taken ? this.grant(taken, 'holds', false) : BUSY;
    }
    return this.queue(session, owner, mine?.held ? undefined : mine, holder);
  }

  /** The owner holds the key already: another hold on it, or undefined when the key is gone. */
  protected async reenter(mine: OwnedKey, waiting: boolean): Promise<AttemptResult | undefined> {
    if (!this.options.reentrant) {
      // A mutex its own owner asks for again: held (by itself) until that hold is released.
      return waiting ? this.waitForDeletion(mine.session, mine.key, mine.revision + 1) : BUSY;
    }
    return (await this.stillThere(mine)) ? this.grant(mine, 'holds', false) : undefined;
  }

  private async queue(
    session: EtcdSession,
    owner: string,
    mine: OwnedKey | undefined,
    holder: HolderMetadata | undefined,
  ): Promise<AttemptResult> {
    const keysOnly = { keysOnly: true };
    const mode = this.options.mode;
    const { entry, ranges, created, alone } = await this.enqueue(
      session,
      owner,
      mine,
      [mode, holder],
      [op.byCreation(this.dir, 'Ascend', 1, keysOnly), op.byCreation(this.dir, 'Descend', 2, keysOnly)],
      mine === undefined, // a key found again is in the queue already: the queue is not empty
    );
    if (alone) return this.grant(entry, 'holds', false);
    const [first, newest] = ranges as [(typeof ranges)[0], (typeof ranges)[0]];
    if (first.kvs[0] && keyOf(first.kvs[0]) === entry.key) return this.grant(entry, 'holds', false);
    // Just put, the key is the newest: the one before it is the second newest.
    const before = created ? newest.kvs[1] : undefined;
    if (before) return this.waitForDeletion(session, keyOf(before), revisionOf(newest.header) + 1);
    return this.waitForPredecessor(session, entry);
  }

  /** Watches the last key created before the entry's (etcd's waitDeletes), or grants if none is left. */
  private async waitForPredecessor(session: EtcdSession, entry: OwnedKey): Promise<AttemptResult> {
    const range = await this.ctx.store.range(
      rangeByCreation(this.dir, 'Descend', 1, { keysOnly: true, createdBefore: entry.revision }),
    );
    const before = range.kvs[0];
    if (before === undefined) return this.grant(entry, 'holds', false);
    return this.waitForDeletion(session, keyOf(before), revisionOf(range.header) + 1);
  }

  async release(owner: string): Promise<ReleaseResult> {
    const mine = this.ctx.owned.get(this.dir, owner);
    if (!mine?.held || mine.holds === 0) return EXPIRED;
    if (mine.holds > 1) {
      mine.holds--;
      return STILL_HELD;
    }
    return this.releaseLast(mine);
  }

  protected releaseLast(mine: OwnedKey): Promise<ReleaseResult> {
    return this.deleteKey(mine);
  }

  async extend(): Promise<'expired'> {
    return 'expired'; // never asked: holds have no lease of their own (leases: 'none')
  }

  /**
   * The first key holds; its lease's time to live is how long it lasts without its client. Its owner
   * and record are `heldBy` (acquiredAt: when the attempt that put the key was made — for a key that
   * queued, before it held).
   */
  async inspect(): Promise<LockInfo> {
    const range = await this.ctx.store.range(rangeByCreation(this.dir, 'Ascend', 1));
    const holder = range.kvs[0];
    if (holder === undefined)
      return { held: false, holders: 0, remainingMs: undefined, heldBy: [], waiting: 0 };
    const remainingMs = await this.ctx.store.remainingMs([holder.lease]);
    // `count` is every key of the range, the limit aside: the holder's and each waiter's.
    const waiting = Number(range.count) - 1;
    return { held: true, holders: 1, remainingMs, heldBy: [holderOf(this.dir, holder)], waiting };
  }

  /** This client's holds of `owner` (a session's holds live in its client). */
  async holdCount(owner: string): Promise<number> {
    const mine = this.ctx.owned.get(this.dir, owner);
    return mine?.held && mine.session.alive ? mine.holds : 0;
  }
}
