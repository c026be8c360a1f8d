import { LockNotReplicatedError } from '../locks/errors.js';
import {
  Granted,
  type AttemptRequest,
  type AttemptResult,
  type ExtendStatus,
  type HandOffOffer,
  type LockInfo,
  type LockResource,
  type ReleaseResult,
} from '../backend/index.js';
import type { RedisClient } from './connection.js';

/**
 * RedisLockClient's `replicaAcks`: how many replicas must have a taken lock, and how long to wait for
 * them, before the acquire succeeds (see ReplicatedResource for what it does and does not promise).
 */
export interface ReplicaAcks {
  /** Replicas that must acknowledge a taken lock (Redis `WAIT`). */
  readonly replicas: number;
  /** How long to wait for them, ms; a lock not acknowledged in time is given back. */
  readonly timeoutMs: number;
}

/**
 * Opt-in replica acknowledgement: after a lock is taken on the master, `WAIT` until the given number
 * of replicas have it; if they do not in time, the lock is given back and the acquire fails with
 * LockNotReplicatedError. It narrows the failover hazard, it does not close it: replication stays
 * asynchronous (an acknowledged write can still be lost if the replica that had it is not the one
 * promoted, or restarts without persistence), and hand-offs inside a client are covered only by the
 * next acknowledgement on the same connection. Fencing tokens remain the remedy for the resource.
 */
export class ReplicatedResource implements LockResource {
  readonly name: string;
  readonly waitKey: string;
  readonly wakeChannel: string | undefined;
  readonly leases: LockResource['leases'];
  readonly handsOff: boolean;

  constructor(
    private readonly inner: LockResource,
    private readonly client: RedisClient,
    private readonly acks: ReplicaAcks,
  ) {
    this.name = inner.name;
    this.waitKey = inner.waitKey;
    this.wakeChannel = inner.wakeChannel;
    this.leases = inner.leases;
    this.handsOff = inner.handsOff;
  }

  async attempt(request: AttemptRequest): Promise<AttemptResult> {
    const result = await this.inner.attempt(request);
    if (!(result instanceof Granted)) return result;
    // WAIT counts this connection's writes so far: the grant (and anything sent before it).
    const acknowledged = await this.client.wait(this.acks.replicas, this.acks.timeoutMs);
    if (acknowledged >= this.acks.replicas) return result;
    await this.inner.release(request.owner, undefined);
    throw new LockNotReplicatedError(this.name, acknowledged, this.acks.replicas);
  }

  release(owner: string, offer: HandOffOffer | undefined, leaseLive?: boolean): Promise<ReleaseResult> {
    return this.inner.release(owner, offer, leaseLive);
  }

  extend(owner: string, leaseMs: number): Promise<ExtendStatus> {
    return this.inner.extend(owner, leaseMs);
  }

  inspect(): Promise<LockInfo> {
    return this.inner.inspect();
  }

  leave(owner: string, won: boolean, lastOfClient: boolean): void {
    this.inner.leave(owner, won, lastOfClient);
  }

  holdCount(owner: string): Promise<number> {
    return this.inner.holdCount?.(owner) ?? Promise.resolve(0);
  }

  setPermits(permits: number): Promise<void> {
    return this.inner.setPermits?.(permits) ?? Promise.resolve();
  }
}
