import {
  type AttemptRequest,
  type AttemptResult,
  type ExtendStatus,
  type LockInfo,
  type LockResource,
  type ReleaseResult,
} from '../backend/index.js';
import { extendStatus, releaseResult } from './codes.js';
import type { RedisLockContext } from './context.js';
import { holderRecord, RedisResource } from './resource.js';
import { LOCK_SCRIPTS } from './lock-scripts.js';

/**
 * A reentrant lock granted strictly in arrival order across all clients (fair-*.lua): every waiter
 * has a place in a queue on Redis with a deadline on Redis's clock that its attempts keep pushing
 * back, so a dead waiter is dropped instead of stalling the queue. A release hands the lock to the next
 * waiter itself when that waiter is this client's, and otherwise wakes only it, by name.
 * A holder's record is a field ('\0h') of the lock's hash, as for reentrant locks; a queued waiter's
 * rides with its place in the queue, so a release that grants it the lock stores it too.
 */
export class FairResource extends RedisResource implements LockResource {
  readonly waitKey: string;
  readonly wakeChannel: string;
  readonly leases = 'renewable' as const;
  readonly handsOff = false;
  readonly holderKeys: readonly string[];
  private readonly acquireKeys: readonly string[];
  private readonly releaseKeys: readonly string[];
  private readonly leaveKeys: readonly string[];

  constructor(ctx: RedisLockContext, name: string) {
    super(ctx, name);
    const lock = `${this.base}:fair`;
    const queue = `${lock}:queue`;
    const deadlines = `${lock}:deadlines`;
    const waiters = `${lock}:waiters`;
    this.waitKey = lock;
    this.wakeChannel = `${lock}:wake`;
    this.holderKeys = [lock];
    this.acquireKeys = [lock, queue, deadlines, this.fence, waiters];
    this.releaseKeys = [lock, queue, deadlines, this.wakeChannel, waiters, this.fence];
    this.leaveKeys = [lock, queue, deadlines, this.wakeChannel, waiters];
  }

  async attempt({ owner, leaseMs, waiting, holder }: AttemptRequest): Promise<AttemptResult> {
    const { waiterTimeoutMs, clientId } = this.ctx;
    const args = [
      owner,
      leaseMs ?? 0,
      waiting ? 1 : 0,
      waiterTimeoutMs,
      clientId,
      holderRecord(owner, holder),
    ];
    return RedisResource.attemptResult(
      await this.run(LOCK_SCRIPTS.fairAcquire, this.acquireKeys, args),
      false,
    );
  }

  async release(owner: string): Promise<ReleaseResult> {
    const reply = await this.run(LOCK_SCRIPTS.fairRelease, this.releaseKeys, [owner, this.ctx.clientId]);
    if (Array.isArray(reply)) {
      // The next waiter in line is one of ours: the script gave it the lock already.
      return { outcome: 'released', handedOffToken: Number(reply[0]), handedOffOwner: String(reply[1]) };
    }
    return releaseResult(reply);
  }

  async extend(owner: string, leaseMs: number): Promise<ExtendStatus> {
    return extendStatus(await this.run(LOCK_SCRIPTS.reentrantExtend, [this.waitKey], [owner, leaseMs]));
  }

  inspect(): Promise<LockInfo> {
    return this.inspectHolder('hash', [this.waitKey, this.waitKey]);
  }

  leave(owner: string, won: boolean): void {
    // A waiter that gave up leaves the queue (and passes the turn on if it was next).
    if (!won) this.background(this.run(LOCK_SCRIPTS.fairLeave, this.leaveKeys, [owner]));
  }

  async holdCount(owner: string): Promise<number> {
    return Number((await this.ctx.client.hget(this.waitKey, owner)) ?? 0);
  }
}
