import { PermitsMismatchError } from '../locks/errors.js';
import {
  Granted,
  decodeHolder,
  type AttemptRequest,
  type AttemptResult,
  type ExtendStatus,
  type HandOffOffer,
  type LockInfo,
  type LockResource,
  type ReleaseResult,
} from '../backend/index.js';
import { extendStatus, releaseResult } from './codes.js';
import type { RedisLockContext } from './context.js';
import { holderRecord, RedisResource } from './resource.js';
import { LOCK_SCRIPTS } from './lock-scripts.js';

/** The error a semaphore script answers when another permit count is stored: PermitsMismatchError. */
function permitsMismatch(error: unknown, name: string, configured: number): unknown {
  const match = error instanceof Error ? /^LOCKSTOCK_PERMITS (\d+)/.exec(error.message) : null;
  return match ? new PermitsMismatchError(name, configured, Number(match[1])) : error;
}

/**
 * Permits each with a lease, in a zset on Redis's clock (semaphore-*.lua), with the mutex's cohort
 * protocol: a release hands its permit to a waiter of the same client in the script itself, and
 * clients with waiters take turns in arrival order (client-turns.lua), so a release wakes one client,
 * not the first waiter of every client. Each holder's record (holderMetadata) is a key of its own,
 * `<permits key>:holder:<owner>`, with the permit's lease as its TTL: it ends with the permit even
 * when a dead holder's permit is dropped, with no sweep and whoever drops it.
 */
export class SemaphoreResource extends RedisResource implements LockResource {
  readonly waitKey: string;
  readonly wakeChannel: string;
  readonly leases = 'renewable' as const;
  readonly handsOff = true;
  readonly holderKeys: readonly string[];
  private readonly queue: string;
  private readonly permitsKey: string;

  constructor(
    ctx: RedisLockContext,
    name: string,
    readonly permits: number,
  ) {
    super(ctx, name);
    this.waitKey = `${this.base}:semaphore`;
    this.wakeChannel = `${this.waitKey}:wake`;
    this.queue = `${this.waitKey}:queue`;
    this.permitsKey = `${this.waitKey}:permits`;
    // Records are per owner, so a force unlock cannot name them: they end with their leases.
    this.holderKeys = [this.waitKey];
  }

  /** Where `owner`'s holder record lives (its hash tag is the lock's: same Cluster slot). */
  private recordKey(owner: string): string {
    return `${this.waitKey}:holder:${owner}`;
  }

  /**
   * The record key a script writes, renews or deletes for `owner`: the permits key in its place when
   * this client keeps no records (the scripts then skip it: no command more per acquire or release).
   */
  private storedRecordKey(owner: string): string {
    return this.ctx.holderMetadata ? this.recordKey(owner) : this.waitKey;
  }

  async attempt({ owner, leaseMs, waiting, holder }: AttemptRequest): Promise<AttemptResult> {
    if (waiting) this.ctx.turns.attempted(this.wakeChannel); // a waiter's try: see ClientTurns
    const keys = [this.waitKey, this.fence, this.queue, this.permitsKey, this.storedRecordKey(owner)];
    let reply: unknown;
    try {
      reply = await this.run(LOCK_SCRIPTS.semaphoreAcquire, keys, [
        owner,
        leaseMs ?? 0,
        this.permits,
        this.ctx.clientId,
        waiting ? 1 : 0,
        holderRecord(owner, holder),
      ]);
    } catch (error) {
      throw permitsMismatch(error, this.name, this.permits);
    }
    // The last permit comes back as a string: nobody else needs to try (see semaphore-acquire.lua).
    if (typeof reply === 'string') return new Granted(Number(reply), false);
    return RedisResource.attemptResult(reply, true);
  }

  release(owner: string, offer: HandOffOffer | undefined): Promise<ReleaseResult> {
    const keys = [
      this.waitKey,
      this.fence,
      this.wakeChannel,
      this.queue,
      this.storedRecordKey(owner),
      offer ? this.storedRecordKey(offer.owner) : this.waitKey,
    ];
    return this.releaseWithTurns(LOCK_SCRIPTS.semaphoreRelease, keys, this.waitKey, owner, offer);
  }

  setPermits(permits: number): Promise<void> {
    return this.storePermits(this.permitsKey, this.wakeChannel, permits);
  }

  async extend(owner: string, leaseMs: number): Promise<ExtendStatus> {
    const keys = [this.waitKey, this.storedRecordKey(owner)];
    return extendStatus(await this.run(LOCK_SCRIPTS.semaphoreExtend, keys, [owner, leaseMs]));
  }

  /**
   * A permit reserved for another client's turn counts as in use (it is being handed over), but has
   * no holder in `heldBy`. The holders' records are read in a second step (their keys are known only
   * once the holders are): a permit returned in between shows its owner alone, or not at all.
   */
  async inspect(): Promise<LockInfo> {
    const reply = await this.run(LOCK_SCRIPTS.leasesInspect, [this.waitKey], []);
    const [live, remaining, ...owners] = reply as [number, number, ...string[]];
    const records =
      owners.length > 0 ? await this.ctx.client.mget(...owners.map((o) => this.recordKey(o))) : [];
    const heldBy = owners.map((owner, i) => {
      const stored = decodeHolder(records[i]);
      return stored?.owner === owner ? stored : { owner };
    });
    return { held: live > 0, holders: live, remainingMs: live > 0 ? remaining : undefined, heldBy };
  }

  leave(_owner: string, _won: boolean, lastOfClient: boolean): void {
    if (!lastOfClient) return;
    this.ctx.turns.streakEnded(this.waitKey);
    // The client stops waiting: out of the turn queue, or a release would reserve a permit for it.
    this.background(this.ctx.client.zrem(this.queue, this.ctx.clientId));
  }
}

/**
 * Redisson's RSemaphore: permits in use are one integer, without owners or leases. Cheap, but a
 * holder that dies keeps its permit for good (reset the key by hand) — prefer SemaphoreResource.
 */
export class CounterSemaphoreResource extends RedisResource implements LockResource {
  readonly waitKey: string;
  readonly wakeChannel: string;
  readonly leases = 'none' as const;
  readonly handsOff = false;
  readonly holderKeys: readonly string[];
  private readonly permitsKey: string;
  private readonly acquireKeys: readonly string[];
  private readonly releaseKeys: readonly string[];

  constructor(
    ctx: RedisLockContext,
    name: string,
    readonly permits: number,
  ) {
    super(ctx, name);
    this.waitKey = `${this.base}:counter-semaphore`;
    this.wakeChannel = `${this.waitKey}:wake`;
    this.permitsKey = `${this.waitKey}:permits`;
    this.holderKeys = [this.waitKey];
    this.acquireKeys = [this.waitKey, this.fence, this.permitsKey];
    this.releaseKeys = [this.waitKey, this.wakeChannel];
  }

  async attempt(): Promise<AttemptResult> {
    let reply: unknown;
    try {
      reply = await this.run(LOCK_SCRIPTS.counterSemaphoreAcquire, this.acquireKeys, [this.permits]);
    } catch (error) {
      throw permitsMismatch(error, this.name, this.permits);
    }
    return RedisResource.attemptResult(reply, true);
  }

  setPermits(permits: number): Promise<void> {
    return this.storePermits(this.permitsKey, this.wakeChannel, permits);
  }

  async release(): Promise<ReleaseResult> {
    return releaseResult(await this.run(LOCK_SCRIPTS.counterSemaphoreRelease, this.releaseKeys, []));
  }

  async extend(): Promise<ExtendStatus> {
    return 'extended'; // nothing expires
  }

  async inspect(): Promise<LockInfo> {
    const used = Number((await this.ctx.client.get(this.waitKey)) ?? 0);
    return { held: used > 0, holders: used, remainingMs: undefined };
  }

  leave(): void {
    // Waiters queue nowhere on Redis.
  }
}
