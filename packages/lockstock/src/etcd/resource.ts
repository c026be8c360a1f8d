import type { IEvent, IRangeResponse, IRequestOp, ITxnResponse } from 'etcd3';
import {
  Busy,
  Granted,
  type AttemptRequest,
  type AttemptResult,
  type BackendHost,
  type HolderMetadata,
  type ReleaseResult,
  type Watch,
} from '../backend/index.js';
import { LockLostError } from '../locks/errors.js';
import { etcd3 } from './driver.js';
import { ownerKey } from './keys.js';
import type { OwnedKey, OwnedKeys } from './owned.js';
import type { EtcdSession } from './session.js';
import { cmp, createdAt, op, rangeAt, revisionOf, type EtcdStore, type WatchSpec } from './store.js';
import { keyValue, recordOf, type KeyMode } from './value.js';

/** What every resource of one client shares. */
export interface EtcdContext {
  readonly store: EtcdStore;
  readonly keyPrefix: string;
  readonly owned: OwnedKeys;
  readonly host: BackendHost;
  /** The live session, opened first if there is none. */
  session(): Promise<EtcdSession>;
}

export const BUSY = new Busy(undefined);
/** Try again at once: the session ended under the attempt (the next one opens a new session). */
const RETRY = new Busy(0);
const RELEASED: ReleaseResult = Object.freeze({ outcome: 'released' });
export const STILL_HELD: ReleaseResult = Object.freeze({ outcome: 'still_held' });
export const EXPIRED: ReleaseResult = Object.freeze({ outcome: 'expired' });

/** What `enqueue` found: the owner's key, and the ranges read in the same transaction. */
export interface Enqueued {
  readonly entry: OwnedKey;
  readonly ranges: readonly IRangeResponse[];
  /** The key was put by this very transaction (it is the newest key of the lock). */
  readonly created: boolean;
  /**
   * The queue was empty and the key was put alone (`emptyFirst`): it holds, and `ranges` is empty —
   * nothing was read.
   */
  readonly alone: boolean;
}

/**
 * What every etcd lock resource shares: its queue directory, the owner's key in it, the transaction
 * that puts a key or finds it again, watches that also fire when the session ends, and withdrawing a
 * waiter's key. Holds have no lease of their own (`leases: 'none'`): the session carries them.
 */
export abstract class EtcdResource {
  readonly waitKey: string;
  readonly wakeChannel = undefined;
  readonly leases = 'none' as const;
  readonly handsOff = false;

  constructor(
    protected readonly ctx: EtcdContext,
    readonly name: string,
    /** The queue directory: every holder's and waiter's key starts with it. */
    readonly dir: string,
  ) {
    this.waitKey = dir;
  }

  async attempt(request: AttemptRequest): Promise<AttemptResult> {
    try {
      return await this.attemptOn(request);
    } catch (error) {
      // etcd refused a put on the session's lease before the session heard it was gone: the session
      // has ended now (onSession), and the next attempt runs on a new one.
      if (error instanceof etcd3().EtcdLeaseInvalidError) return RETRY;
      throw error;
    }
  }

  protected abstract attemptOn(request: AttemptRequest): Promise<AttemptResult>;

  /** Administrative release (forceUnlock): every key of the queue, holders and waiters. */
  async clear(): Promise<boolean> {
    return (await this.ctx.store.deletePrefix(this.dir)) > 0;
  }

  /**
   * A waiter stopped waiting without the lock: its key leaves the queue (the waiter behind it, which
   * watches it, looks again). A won key stays: it holds.
   */
  leave(owner: string, won: boolean): void {
    if (won) return;
    const mine = this.ctx.owned.get(this.dir, owner);
    if (mine === undefined || mine.held) return;
    this.ctx.owned.delete(mine);
    this.ctx.store
      .txn([cmp.createdAt(mine.key, mine.revision)], [op.delete(mine.key)])
      .catch((error: unknown) => this.ctx.host.reportError(error));
  }

  /**
   * The owner's key in this lock, if it has one in a live session. An entry of an ended session is
   * dropped — its key went with its lease — and a waiter's is refused with LockLostError when
   * `staleWaiter` is 'reject' (an election: a candidate whose session ended must know, not requeue).
   */
  protected mine(owner: string, staleWaiter: 'requeue' | 'reject' = 'requeue'): OwnedKey | undefined {
    const mine = this.ctx.owned.get(this.dir, owner);
    if (mine === undefined || mine.session.alive) return mine;
    this.ctx.owned.delete(mine);
    if (!mine.held && staleWaiter === 'reject') {
      throw new LockLostError(this.name, 'session_lost', owner, 0, { cause: mine.session.endedWith });
    }
    return undefined;
  }

  /**
   * Puts the owner's key unless it has one (Go's Mutex: `If(CreateRevision(key) == 0)`), its value
   * the mode and the holder's record (value.ts), and reads `reads` in the same transaction — after the
   * put, so they see it. A key found again keeps the record of the attempt that put it.
   *
   * `emptyFirst` (a lock whose first key holds): the transaction first asks whether the queue is empty
   * and then only puts the key — it is the first, so it holds — and otherwise runs the put-and-read
   * above as a nested transaction, in the same round trip. An uncontended acquire then reads nothing:
   * etcd sorts no range and the client decodes none.
   */
  protected async enqueue(
    session: EtcdSession,
    owner: string,
    mine: OwnedKey | undefined,
    [mode, holder]: readonly [KeyMode, HolderMetadata | undefined],
    reads: readonly IRequestOp[],
    emptyFirst = false,
  ): Promise<Enqueued> {
    if (mine !== undefined) {
      const again = await this.ctx.store.txn([], [op.get(mine.key), ...reads]);
      if (rangeAt(again, 0).kvs.length > 0)
        return { entry: mine, ranges: ranges(again, reads), created: false, alone: false };
      this.ctx.owned.delete(mine); // deleted behind our back (forceUnlock): queue again, at the end
    }
    const key = ownerKey(this.dir, session.hex, owner);
    const value = keyValue(mode, owner, holder);
    const put = op.put(key, value, session.id);
    const queued = {
      compare: [cmp.createdAt(key, 0)],
      success: [put, ...reads],
      failure: [op.get(key), ...reads],
    };
    const outer = await this.onSession(session, () =>
      emptyFirst
        ? this.ctx.store.txn([cmp.emptyDir(this.dir)], [put], [{ request_txn: queued }])
        : this.ctx.store.txn(queued.compare, queued.success, queued.failure),
    );
    // The key's create revision is the whole transaction's: a nested one reports no header of its own.
    const putRevision = revisionOf(outer.header);
    const record = value.slice(mode.length);
    if (emptyFirst && outer.succeeded) {
      const entry = this.ctx.owned.add({ dir: this.dir, owner, key, session, revision: putRevision, record });
      return { entry, ranges: [], created: true, alone: true };
    }
    const reply = emptyFirst ? nestedTxn(outer) : outer;
    const existing = reply.succeeded ? undefined : rangeAt(reply, 0).kvs[0];
    const revision = existing ? createdAt(existing) : putRevision;
    const entry = this.ctx.owned.add({
      dir: this.dir,
      owner,
      key,
      session,
      revision,
      record: existing ? recordOf(existing.value) : record,
    });
    return { entry, ranges: ranges(reply, reads), created: reply.succeeded, alone: false };
  }

  /** Puts the owner's key only if the queue is empty: a try that will not wait never queues. */
  protected async take(
    session: EtcdSession,
    owner: string,
    [mode, holder]: readonly [KeyMode, HolderMetadata | undefined],
  ): Promise<OwnedKey | undefined> {
    const key = ownerKey(this.dir, session.hex, owner);
    const value = keyValue(mode, owner, holder);
    const reply = await this.onSession(session, () =>
      this.ctx.store.txn([cmp.emptyDir(this.dir)], [op.put(key, value, session.id)]),
    );
    if (!reply.succeeded) return undefined;
    const revision = revisionOf(reply.header);
    return this.ctx.owned.add({
      dir: this.dir,
      owner,
      key,
      session,
      revision,
      record: value.slice(mode.length),
    });
  }

  /**
   * The key holds now. Checked against the session last, synchronously: a grant from a session that
   * ended meanwhile would be a hold nobody can lose any more (its loss was already reported).
   */
  protected grant(entry: OwnedKey, side: 'holds' | 'reads', more: boolean): AttemptResult {
    if (!entry.session.alive) return RETRY;
    if (!entry.held) this.ctx.owned.hold(entry);
    entry[side]++;
    return new Granted(entry.revision, more);
  }

  /** A refused try that will not wait takes its key out of the queue again. */
  protected async withdraw(entry: OwnedKey): Promise<AttemptResult> {
    this.ctx.owned.delete(entry);
    await this.ctx.store.txn([cmp.createdAt(entry.key, entry.revision)], [op.delete(entry.key)]);
    return BUSY;
  }

  /** Releases the key's last hold: deletes it if it is still this hold's. */
  protected async deleteKey(entry: OwnedKey): Promise<ReleaseResult> {
    this.ctx.owned.delete(entry);
    const reply = await this.ctx.store.txn(
      [cmp.createdAt(entry.key, entry.revision)],
      [op.delete(entry.key)],
    );
    return reply.succeeded ? RELEASED : EXPIRED;
  }

  /** Re-entry into a key held already: only while the key is still there (not force-unlocked). */
  protected async stillThere(entry: OwnedKey): Promise<boolean> {
    const reply = await this.ctx.store.txn([cmp.createdAt(entry.key, entry.revision)], []);
    if (!reply.succeeded) this.ctx.owned.delete(entry);
    return reply.succeeded;
  }

  /** Refused until `spec` sees an event `fires` accepts, or the session ends (the waiter looks again). */
  protected waitOn(session: EtcdSession, spec: WatchSpec, fires: (event: IEvent) => boolean): Busy {
    return new Busy(undefined, this.watch(session, spec, fires));
  }

  /** Refused until `key` is deleted (Go's waitDelete), or the session ends. */
  protected waitForDeletion(session: EtcdSession, key: string, from: number): Busy {
    return this.waitOn(session, { key, from, deletesOnly: true }, () => true);
  }

  private watch(session: EtcdSession, spec: WatchSpec, fires: (event: IEvent) => boolean): Watch {
    const watch = this.ctx.store.watch(spec, fires);
    let wake!: () => void;
    const changed = new Promise<void>((resolve) => (wake = resolve));
    void watch.changed.then(() => wake());
    // A waiter whose key went with its session must not sleep on: its place is gone (Go's Election
    // misses this — its campaign waits on the keys before it and then "wins" without a key).
    const off = session.onEnd(() => wake());
    return {
      changed,
      cancel: () => {
        off();
        watch.cancel();
      },
    };
  }

  /** A put refused because the session's lease is gone ends the session (and is tried again). */
  private async onSession<T>(session: EtcdSession, put: () => Promise<T>): Promise<T> {
    try {
      return await put();
    } catch (error) {
      if (error instanceof etcd3().EtcdLeaseInvalidError) session.leaseGone(error);
      throw error;
    }
  }
}

/** Events a watch reports: 'Put' or 'Delete'. */
export const isDelete = (event: IEvent): boolean => event.type === 'Delete';

/** The answer of the transaction nested as the first operation of `reply`'s failure branch. */
function nestedTxn(reply: ITxnResponse): ITxnResponse {
  const nested = reply.responses[0]?.response_txn;
  if (nested === undefined) throw new Error('etcd transaction: no nested transaction response');
  return nested;
}

/** The ranges read after the transaction's first operation (the put, or the get of the key). */
function ranges(reply: ITxnResponse, reads: readonly IRequestOp[]): IRangeResponse[] {
  return reads.map((_, i) => rangeAt(reply, i + 1));
}
