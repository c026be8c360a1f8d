import { LockUpgradeError } from '../locks/errors.js';
import {
  decodeHolder,
  type AttemptRequest,
  type AttemptResult,
  type ExtendStatus,
  type LockHolderInfo,
  type LockInfo,
  type LockResource,
  type ReleaseResult,
} from '../backend/index.js';
import { extendStatus, releaseResult } from './codes.js';
import type { RedisLockContext } from './context.js';
import { holderRecord, RedisResource } from './resource.js';
import { LOCK_SCRIPTS } from './lock-scripts.js';

/** The keys of one read-write lock (see rw-*.lua). */
class ReadWriteKeys {
  readonly writer: string;
  readonly readers: string;
  readonly intent: string;
  readonly channel: string;
  /** Both sides wait in one room, so a client's readers and writers queue in one FIFO. */
  readonly waitKey: string;

  constructor(base: string) {
    this.waitKey = `${base}:rw`;
    this.writer = `${base}:rw:writer`;
    this.readers = `${base}:rw:readers`;
    this.intent = `${base}:rw:intent`;
    this.channel = `${base}:rw:wake`;
  }
}

/**
 * One side of a read-write lock. Each side reports and force-unlocks its own holders: `read`'s
 * inspect() counts live readers only, `write`'s sees the writer only (Redisson's per-side isLocked).
 * Holder records live in the hold itself: the writer's as a field ('\0h') of its hash, as for
 * reentrant locks; each reader's at the end of its own field (rw-readers.lua).
 */
abstract class ReadWriteSide extends RedisResource implements LockResource {
  readonly waitKey: string;
  readonly wakeChannel: string;
  readonly leases = 'renewable' as const;
  readonly handsOff = false;
  protected readonly keys: ReadWriteKeys;
  protected readonly acquireKeys: readonly string[];

  constructor(ctx: RedisLockContext, name: string) {
    super(ctx, name);
    this.keys = new ReadWriteKeys(this.base);
    this.waitKey = this.keys.waitKey;
    this.wakeChannel = this.keys.channel;
    this.acquireKeys = [this.keys.writer, this.keys.readers, this.keys.intent, this.fence];
  }

  abstract attempt(request: AttemptRequest): Promise<AttemptResult>;
  abstract release(owner: string, offer?: undefined, leaseLive?: boolean): Promise<ReleaseResult>;
  abstract extend(owner: string, leaseMs: number): Promise<ExtendStatus>;
  abstract leave(owner: string, won: boolean): void;
  abstract holdCount(owner: string): Promise<number>;
  abstract inspect(): Promise<LockInfo>;
}

/** Shared: many readers with a lease each, refused while a writer holds or waits. */
export class ReadResource extends ReadWriteSide {
  private readonly releaseKeys = [this.keys.readers, this.keys.channel, this.keys.intent];
  readonly holderKeys: readonly string[] = [this.keys.readers];

  /** The readers whose lease has not ended, each with its record (a writer is the write side's). */
  async inspect(): Promise<LockInfo> {
    const reply = await this.run(LOCK_SCRIPTS.readersInspect, [this.keys.readers], []);
    const [live, remaining, ...pairs] = reply as [number, number, ...Array<string | null>];
    const heldBy: LockHolderInfo[] = [];
    for (let i = 0; i < pairs.length; i += 2) {
      const owner = String(pairs[i]);
      const stored = decodeHolder(pairs[i + 1]);
      heldBy.push(stored?.owner === owner ? stored : { owner });
    }
    return { held: live > 0, holders: live, remainingMs: live > 0 ? remaining : undefined, heldBy };
  }

  async attempt({ owner, leaseMs, holder }: AttemptRequest): Promise<AttemptResult> {
    const args = [owner, leaseMs ?? 0, holderRecord(owner, holder)];
    const reply = await this.run(LOCK_SCRIPTS.readAcquire, this.acquireKeys, args);
    return RedisResource.attemptResult(reply, true);
  }

  async release(owner: string, _offer?: undefined, leaseLive = false): Promise<ReleaseResult> {
    const args = [owner, leaseLive ? 1 : 0];
    return releaseResult(await this.run(LOCK_SCRIPTS.readRelease, this.releaseKeys, args));
  }

  async extend(owner: string, leaseMs: number): Promise<ExtendStatus> {
    return extendStatus(await this.run(LOCK_SCRIPTS.readExtend, [this.keys.readers], [owner, leaseMs]));
  }

  leave(): void {
    // Readers queue nowhere on Redis.
  }

  /** The field is '<count> <token> <lease end>': parsed, and checked against Redis's clock, by Lua. */
  async holdCount(owner: string): Promise<number> {
    return Number(await this.run(LOCK_SCRIPTS.readHoldCount, [this.keys.readers], [owner]));
  }
}

/** Exclusive: no writer and no reader; a waiting writer's intent keeps new readers out. */
export class WriteResource extends ReadWriteSide {
  readonly holderKeys: readonly string[] = [this.keys.writer];

  /** The writer only, with its record (readers, if any, are the read side's). */
  inspect(): Promise<LockInfo> {
    return this.inspectHolder('hash', [this.keys.writer, this.keys.writer]);
  }

  async attempt({ owner, leaseMs, waiting, holder }: AttemptRequest): Promise<AttemptResult> {
    const args = [
      owner,
      leaseMs ?? 0,
      waiting ? 1 : 0,
      this.ctx.waiterTimeoutMs,
      holderRecord(owner, holder),
    ];
    const reply = await this.run(LOCK_SCRIPTS.writeAcquire, this.acquireKeys, args).catch(
      (error: unknown) => {
        if (error instanceof Error && error.message.startsWith('LOCKSTOCK_UPGRADE')) {
          throw new LockUpgradeError(this.name, owner);
        }
        throw error;
      },
    );
    return RedisResource.attemptResult(reply, false);
  }

  async release(owner: string): Promise<ReleaseResult> {
    return releaseResult(
      await this.run(LOCK_SCRIPTS.writeRelease, [this.keys.writer, this.keys.channel], [owner]),
    );
  }

  async extend(owner: string, leaseMs: number): Promise<ExtendStatus> {
    return extendStatus(await this.run(LOCK_SCRIPTS.reentrantExtend, [this.keys.writer], [owner, leaseMs]));
  }

  leave(owner: string, won: boolean): void {
    if (!won) this.background(this.run(LOCK_SCRIPTS.writeIntentDrop, [this.keys.intent], [owner]));
  }

  async holdCount(owner: string): Promise<number> {
    return Number((await this.ctx.client.hget(this.keys.writer, owner)) ?? 0);
  }
}
