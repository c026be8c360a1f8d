import { assertKeyName } from './keys.js';
import type { ScriptArg, LuaScript } from './scripts.js';
import {
  Busy,
  Granted,
  decodeHolder,
  encodeHolder,
  type AttemptResult,
  type HandOffOffer,
  type HolderMetadata,
  type LockHolderInfo,
  type LockInfo,
  type ReleaseResult,
} from '../backend/index.js';

/** The holder record an acquire or hand-off script stores: '' (none) when the caller gave no metadata. */
export function holderRecord(owner: string, holder: HolderMetadata | undefined): string {
  return holder === undefined ? '' : encodeHolder(owner, holder);
}
import { releaseResult } from './codes.js';
import { LOCK_SCRIPTS } from './lock-scripts.js';
import type { RedisLockContext } from './context.js';

/** What every Redis lock resource has: its name, key base `<prefix>:{name}`, fencing counter. */
export abstract class RedisResource {
  /** `<prefix>:{<name>}`: every key of the lock starts with it, so they share one Cluster slot. */
  protected readonly base: string;
  /** Fencing counter, shared by every kind under this name: tokens grow per lock name. */
  protected readonly fence: string;
  /** The keys an administrative force unlock deletes (holders only, never queues). */
  abstract readonly holderKeys: readonly string[];
  abstract readonly wakeChannel: string | undefined;

  constructor(
    protected readonly ctx: RedisLockContext,
    readonly name: string,
  ) {
    assertKeyName('Lock', name);
    this.base = `${ctx.keyPrefix}:{${name}}`;
    this.fence = `${this.base}:fence`;
  }

  protected run(script: LuaScript, keys: readonly string[], args: readonly ScriptArg[]): Promise<unknown> {
    return this.ctx.scripts.run(script, keys, args);
  }

  /** Fire-and-forget work (dequeueing a waiter): failures go to the client's events. */
  protected background(work: Promise<unknown>): void {
    work.catch((error: unknown) => this.ctx.core.reportError(error));
  }

  /**
   * A release under the cohort protocol (client-turns.lua: mutex, reentrant, semaphore): hand the
   * lock to the offered local waiter (its token comes back as `{token}`) — always, or once the local
   * streak of `waitKey` is over only if no other client waits (ClientTurns.offerMode) — else give
   * another client its turn or free it.
   */
  protected async releaseWithTurns(
    script: LuaScript,
    keys: readonly string[],
    waitKey: string,
    owner: string,
    offer: HandOffOffer | undefined,
  ): Promise<ReleaseResult> {
    const { clientId, turnWindowMs, turns } = this.ctx;
    const args: ScriptArg[] = offer
      ? [owner, turns.offerMode(waitKey), clientId, turnWindowMs, offer.owner, offer.leaseMs ?? 0]
      : [owner, 'notify', clientId, turnWindowMs];
    // The waiter a release hands the lock to is the holder now: its record ('' for none) replaces the
    // last one.
    if (offer) args.push(holderRecord(offer.owner, offer.holder));
    const reply = await this.run(script, keys, args);
    if (Array.isArray(reply)) return { outcome: 'released', handedOffToken: Number(reply[0]) };
    return releaseResult(reply);
  }

  /** Stores a semaphore's permit count for every client, and wakes waiters to re-check against it. */
  protected async storePermits(key: string, channel: string, permits: number): Promise<void> {
    await this.run(LOCK_SCRIPTS.semaphoreSetPermits, [key, channel], [permits]);
  }

  /** An acquire script's reply: a token (taken), or {retry ms} (refused; negative: until woken). */
  protected static attemptResult(reply: unknown, more: boolean): AttemptResult {
    if (typeof reply === 'number') return new Granted(reply, more);
    const ms = Array.isArray(reply) ? Number(reply[0]) : NaN;
    return new Busy(ms >= 0 ? ms : undefined);
  }

  /**
   * inspect() of a mutex ('string'), or of a lock in a hash {owner: count} ('hash': reentrant, spin,
   * fair, the writer of a read-write lock): lease, holder and its record read by one script, so a
   * holder is never paired with another's record.
   */
  protected async inspectHolder(layout: 'string' | 'hash', keys: readonly string[]): Promise<LockInfo> {
    const reply = (await this.run(LOCK_SCRIPTS.holderInspect, keys, [layout])) as [
      number,
      (string | null)?,
      (string | null)?,
    ];
    const [ttl, owner, record] = reply;
    const remainingMs = ttl >= 0 ? ttl : undefined;
    if (owner === undefined || owner === null) {
      return { held: ttl !== -2, holders: ttl === -2 ? 0 : 1, remainingMs, heldBy: [] };
    }
    const stored = decodeHolder(record);
    // A record left by an earlier holder (its lease ran out, the next stored none) is not this one's.
    const holder: LockHolderInfo = stored?.owner === owner ? stored : { owner };
    return { held: true, holders: 1, remainingMs, heldBy: [holder] };
  }
}
