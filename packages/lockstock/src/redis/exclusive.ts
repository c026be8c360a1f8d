import type { LuaScript } from './scripts.js';
import {
  type AttemptRequest,
  type AttemptResult,
  type ExtendStatus,
  type HandOffOffer,
  type LockInfo,
  type LockResource,
  type ReleaseResult,
} from '../backend/index.js';
import { extendStatus } from './codes.js';
import type { RedisLockContext } from './context.js';
import { holderRecord, RedisResource } from './resource.js';
import { LOCK_SCRIPTS } from './lock-scripts.js';

interface ExclusiveScripts {
  readonly acquire: LuaScript;
  readonly release: LuaScript;
  readonly extend: LuaScript;
}

const MUTEX: ExclusiveScripts = {
  acquire: LOCK_SCRIPTS.mutexAcquire,
  release: LOCK_SCRIPTS.mutexRelease,
  extend: LOCK_SCRIPTS.mutexExtend,
};
const REENTRANT: ExclusiveScripts = {
  acquire: LOCK_SCRIPTS.reentrantAcquire,
  release: LOCK_SCRIPTS.reentrantRelease,
  extend: LOCK_SCRIPTS.reentrantExtend,
};

/**
 * An exclusive lock in one key (a string owner for the mutex, a hash {owner: count} for reentrant
 * and spin locks) with the cohort protocol: a release can hand the lock to a waiter of the same
 * client in the script itself, and clients with waiters take turns in arrival order (client-turns.lua).
 * Spin locks use the same scripts without wake-ups: never queued, they back off.
 */
export class ExclusiveResource extends RedisResource implements LockResource {
  readonly waitKey: string;
  readonly wakeChannel: string | undefined;
  readonly leases = 'renewable' as const;
  readonly handsOff = true;
  readonly holderKeys: readonly string[];
  private readonly queue: string;
  private readonly acquireKeys: readonly string[];
  private readonly releaseKeys: readonly string[];
  private readonly extendKeys: readonly string[];
  private readonly inspectKeys: readonly string[];

  private constructor(
    ctx: RedisLockContext,
    name: string,
    private readonly scripts: ExclusiveScripts,
    wakes: boolean,
  ) {
    super(ctx, name);
    const lock = this.base;
    const channel = `${this.base}:unlock`;
    this.queue = `${this.base}:queue`;
    this.waitKey = lock;
    this.wakeChannel = wakes ? channel : undefined;
    if (scripts === MUTEX) {
      // A mutex's value is its owner id: the holder's record lives beside it, with the same lease.
      // A client that keeps no records names the lock key in its place: the scripts then skip it
      // (no delete per release, no expiry per renewal). Its inspect() still reads what others stored.
      const record = `${this.base}:holder`;
      const stored = ctx.holderMetadata ? record : lock;
      this.holderKeys = [lock, record];
      this.acquireKeys = [lock, this.fence, this.queue, stored];
      this.releaseKeys = [lock, this.fence, channel, this.queue, stored];
      this.extendKeys = [lock, stored];
      this.inspectKeys = [lock, record];
    } else {
      // A reentrant or spin lock's hash keeps the record in a field ('\0h'): it ends with the hash.
      this.holderKeys = [lock];
      this.acquireKeys = [lock, this.fence, this.queue];
      this.releaseKeys = [lock, this.fence, channel, this.queue];
      this.extendKeys = [lock];
      this.inspectKeys = [lock, lock]; // the script's KEYS[2] is the mutex's record: unused here
    }
  }

  static mutex(ctx: RedisLockContext, name: string): ExclusiveResource {
    return new ExclusiveResource(ctx, name, MUTEX, true);
  }

  static reentrant(ctx: RedisLockContext, name: string): ExclusiveResource {
    return new ExclusiveResource(ctx, name, REENTRANT, true);
  }

  static spin(ctx: RedisLockContext, name: string): ExclusiveResource {
    return new ExclusiveResource(ctx, name, REENTRANT, false);
  }

  async attempt({ owner, leaseMs, waiting, holder }: AttemptRequest): Promise<AttemptResult> {
    // Only waiters that will be woken queue their client for a turn; spin waiters never do.
    const queue = waiting && this.wakeChannel !== undefined ? 1 : 0;
    const args = [owner, leaseMs ?? 0, this.ctx.clientId, queue, holderRecord(owner, holder)];
    return RedisResource.attemptResult(await this.run(this.scripts.acquire, this.acquireKeys, args), false);
  }

  release(owner: string, offer: HandOffOffer | undefined): Promise<ReleaseResult> {
    return this.releaseWithTurns(this.scripts.release, this.releaseKeys, this.waitKey, owner, offer);
  }

  async extend(owner: string, leaseMs: number): Promise<ExtendStatus> {
    return extendStatus(await this.run(this.scripts.extend, this.extendKeys, [owner, leaseMs]));
  }

  inspect(): Promise<LockInfo> {
    return this.inspectHolder(this.scripts === MUTEX ? 'string' : 'hash', this.inspectKeys);
  }

  leave(_owner: string, _won: boolean, lastOfClient: boolean): void {
    if (!lastOfClient) return;
    this.ctx.turns.streakEnded(this.waitKey);
    // The client stops waiting: out of the turn queue, or a release would reserve the lock for it.
    if (this.wakeChannel !== undefined) this.background(this.ctx.client.zrem(this.queue, this.ctx.clientId));
  }

  async holdCount(owner: string): Promise<number> {
    if (this.scripts === MUTEX) return (await this.ctx.client.get(this.waitKey)) === owner ? 1 : 0;
    return Number((await this.ctx.client.hget(this.waitKey, owner)) ?? 0);
  }
}
