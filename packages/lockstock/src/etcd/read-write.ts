import {
  type AttemptRequest,
  type AttemptResult,
  type LockInfo,
  type LockResource,
  type ReleaseResult,
} from '../backend/index.js';
import { LockUpgradeError } from '../locks/errors.js';
import { queueDir } from './keys.js';
import { ExclusiveResource } from './exclusive.js';
import type { OwnedKey } from './owned.js';
import { EtcdResource, EXPIRED, STILL_HELD, type EtcdContext } from './resource.js';
import { cmp, createdAt, keyOf, op, rangeByCreation, revisionOf } from './store.js';
import { holderOf, isWriter } from './value.js';

// A key's mode starts its value (value.ts): 'w' while its owner holds or wants the write side, else
// 'r'; the holder's record follows it.

/**
 * One queue per read-write lock with one key per owner and session (etcd's RWMutex recipe, in one
 * key instead of a reader's and a writer's): a reader waits for the last writer created before it, a
 * writer for the last key of any kind before it — so a waiting writer keeps later readers out, and
 * readers cannot starve writers. One key per owner is what makes the downgrade safe: a write holder
 * that takes the read side keeps its place (its key, its revision) and the key turns 'r' when the
 * write side is released; a new, younger read key would let a writer queued meanwhile in beside it.
 */
export function readWriteResources(
  ctx: EtcdContext,
  name: string,
): { read: ReadResource; write: WriteResource } {
  return { read: new ReadResource(ctx, name), write: new WriteResource(ctx, name) };
}

/** The exclusive side: a mutex over every key of the lock, refusing a reader's upgrade. */
export class WriteResource extends ExclusiveResource {
  constructor(ctx: EtcdContext, name: string) {
    super(ctx, name, 'rw', { reentrant: true, queues: true, staleWaiter: 'requeue', mode: 'w' });
  }

  /** A read holder would wait for its own read key forever: LockUpgradeError (tryAcquire: no). */
  protected override async reenter(mine: OwnedKey, waiting: boolean): Promise<AttemptResult | undefined> {
    if (mine.holds === 0) throw new LockUpgradeError(this.name, mine.owner);
    return super.reenter(mine, waiting);
  }

  /**
   * The last write hold: the key goes, or — downgraded, read holds left — turns into a reader's,
   * keeping its record (the hold goes on: the holder and since when are the write acquire's).
   */
  protected override async releaseLast(mine: OwnedKey): Promise<ReleaseResult> {
    mine.holds = 0;
    if (mine.reads === 0) return this.deleteKey(mine);
    const reply = await this.ctx.store.txn(
      [cmp.createdAt(mine.key, mine.revision)],
      [op.rewrite(mine.key, `r${mine.record}`)],
    );
    if (reply.succeeded) return { outcome: 'released' };
    this.ctx.owned.delete(mine);
    return EXPIRED;
  }

  /** The writer only: held when the first key is a writer's. */
  override async inspect(): Promise<LockInfo> {
    const range = await this.ctx.store.range(rangeByCreation(this.dir, 'Ascend', 1));
    const first = range.kvs[0];
    if (first === undefined || !isWriter(first)) {
      return { held: false, holders: 0, remainingMs: undefined, heldBy: [] };
    }
    const remainingMs = await this.ctx.store.remainingMs([first.lease]);
    return { held: true, holders: 1, remainingMs, heldBy: [holderOf(this.dir, first)] };
  }
}

/** The shared side: in once no writer's key was created before the reader's. */
export class ReadResource extends EtcdResource implements LockResource {
  readonly ordering = 'server-order' as const;

  constructor(ctx: EtcdContext, name: string) {
    super(ctx, name, queueDir(ctx.keyPrefix, name, 'rw'));
  }

  protected async attemptOn({ owner, waiting, holder }: AttemptRequest): Promise<AttemptResult> {
    let mine = this.mine(owner);
    const session = await this.ctx.session();
    if (mine?.held) {
      // A reader re-entering, or a writer taking the read side (a downgrade): the same key.
      if (await this.stillThere(mine)) return this.grant(mine, 'reads', true);
      mine = undefined;
    }
    const { entry, ranges } = await this.enqueue(
      session,
      owner,
      mine,
      ['r', holder],
      [op.byCreation(this.dir, 'Ascend')],
    );
    const range = ranges[0]!;
    const writer = range.kvs.findLast((kv) => createdAt(kv) < entry.revision && isWriter(kv));
    if (writer === undefined) return this.grant(entry, 'reads', true);
    if (!waiting) return this.withdraw(entry);
    // A writer's key wakes this reader when it is deleted, or rewritten 'r' (its owner downgraded).
    return this.waitOn(session, { key: keyOf(writer), from: revisionOf(range.header) + 1 }, () => true);
  }

  async release(owner: string): Promise<ReleaseResult> {
    const mine = this.ctx.owned.get(this.dir, owner);
    if (!mine?.held || mine.reads === 0) return EXPIRED;
    if (mine.reads > 1) {
      mine.reads--;
      return STILL_HELD;
    }
    mine.reads = 0;
    if (mine.holds > 0) return { outcome: 'released' }; // the key stays: its owner still writes
    return this.deleteKey(mine);
  }

  async extend(): Promise<'expired'> {
    return 'expired'; // never asked: holds have no lease of their own
  }

  /** The readers in: the keys before the first writer's, all readers'. */
  async inspect(): Promise<LockInfo> {
    const range = await this.ctx.store.range(rangeByCreation(this.dir, 'Ascend'));
    const firstWriter = range.kvs.findIndex(isWriter);
    const readers = firstWriter < 0 ? range.kvs : range.kvs.slice(0, firstWriter);
    if (readers.length === 0) return { held: false, holders: 0, remainingMs: undefined, heldBy: [] };
    const remainingMs = await this.ctx.store.remainingMs(readers.map((kv) => kv.lease));
    const heldBy = readers.map((kv) => holderOf(this.dir, kv));
    return { held: true, holders: readers.length, remainingMs, heldBy };
  }

  async holdCount(owner: string): Promise<number> {
    const mine = this.ctx.owned.get(this.dir, owner);
    return mine?.held && mine.session.alive ? mine.reads : 0;
  }
}
