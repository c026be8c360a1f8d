import * as zookeeper from 'node-zookeeper-client';
import {
  Busy,
  Granted,
  type AttemptRequest,
  type BackendUnreachableError,
  type AttemptResult,
  type ExtendStatus,
  type HolderMetadata,
  type LockInfo,
  type LockResource,
  type ReleaseResult,
  type Watch,
} from '../backend/index.js';
import { PermitsMismatchError } from '../locks/errors.js';
import { nodeData, readHolders } from './holders.js';
import { createWithParents, type OwnNode, type OwnNodes } from './nodes.js';
import { sortQueue } from './paths.js';
import { grantNode, releaseNode } from './grant.js';
import { dropWatch, ExclusiveQueue } from './queue.js';
import { codeOf, NO_NODE, NODE_EXISTS, unanswered } from './session.js';

const MAX_ROUNDS = 5;

/**
 * Curator's InterProcessSemaphoreV2: a permit is an ephemeral sequential node under `<base>/leases`
 * (it ends with its holder's session: a crashed holder's permit comes back when its session expires).
 * Taking one happens under a gate, a mutex queue under `<base>/gate`: its holder creates its lease
 * node and holds a permit while the lease nodes, its own included, are no more than the permits;
 * otherwise it keeps the gate and watches the leases (and the stored count) — so one waiter at a
 * time watches the leases and a release wakes one waiter; the others watch their predecessor in the
 * gate. The permit count is the base node's data, stored by the first acquire: a client made with
 * another count gets PermitsMismatchError (setPermits changes it for everyone). One permit per owner.
 */
export class SemaphoreResource implements LockResource {
  readonly wakeChannel = undefined;
  readonly leases = 'none' as const;
  readonly ordering = 'server-order' as const;
  readonly handsOff = false;
  private readonly gate: ExclusiveQueue;
  private readonly leasePath: string;

  constructor(
    private readonly nodes: OwnNodes,
    readonly name: string,
    private readonly base: string,
    private readonly permits: number,
  ) {
    this.gate = new ExclusiveQueue(nodes, name, `${base}/gate`, {
      reentrant: false,
      type: 'lock',
      internal: true,
    });
    this.leasePath = `${base}/leases`;
  }

  get waitKey(): string {
    return this.base;
  }

  /** The connection error while the client has no connection (a timed-out wait says so). */
  unreachable(): BackendUnreachableError | undefined {
    return this.nodes.session.unreachableNow();
  }

  private key(owner: string): string {
    return `${this.leasePath}\0lease\0${owner}`;
  }

  attempt(request: AttemptRequest): Promise<AttemptResult> {
    return this.nodes.serialize(this.key(request.owner), async () => {
      // No connection: a waiter sleeps until there is one (see QueueResource).
      if (request.waiting && this.nodes.session.disconnected) return this.nodes.session.rideOut();
      try {
        return await this.attemptNow(request);
      } catch (error) {
        // A waiter rides out a lost connection: it looks again once connected (see QueueResource).
        if (!request.waiting || !unanswered(error)) throw error;
        return this.nodes.session.rideOut(error);
      }
    });
  }

  private async attemptNow({ owner, waiting, holder }: AttemptRequest): Promise<AttemptResult> {
    await this.checkPermits();
    let { node } = this.nodes.current(this.key(owner));
    if (node?.gone) {
      node.drop();
      node = undefined;
    }
    if (node && node.holds > 0) return new Busy(undefined, waiting ? dropWatch(node) : undefined);
    if (node === undefined && !this.gate.held(owner) && !this.gate.queued(owner)) {
      const outright = await this.takeOutright(owner, holder);
      if (outright !== undefined) return outright;
      if (!waiting) return new Busy(undefined);
    }
    if (!this.gate.held(owner)) {
      const gate = await this.gate.attempt({ owner, leaseMs: undefined, waiting });
      if (gate instanceof Busy) return gate; // waits on its predecessor in the gate
    }
    try {
      return await this.takePermit(owner, node, waiting, holder);
    } catch (error) {
      if (!waiting) await this.giveUp(owner); // a first try leaves nothing behind
      throw error;
    }
  }

  /**
   * Without the gate: a lease node that ranks among the first `permits` of the leases holds (else it
   * is deleted, and the caller queues at the gate). Safe beside the gate's count: of any permits + 1
   * holders, the one whose node came last saw the others' nodes when it looked (they existed from
   * their creation until they held), so it ranked at least `permits` and counted more than `permits`
   * — it could not hold. Uncontended acquires skip the gate's two writes and a round trip.
   */
  private async takeOutright(
    owner: string,
    holder: HolderMetadata | undefined,
  ): Promise<AttemptResult | undefined> {
    const { nodes } = this;
    const trust = nodes.session.trust;
    const node = nodes.add(this.key(owner), this.leasePath, 'lease');
    try {
      const leases = await nodes.enqueue(node, nodeData(owner, holder));
      const rank = leases?.findIndex((lease) => lease.name === node.name) ?? -1;
      if (rank >= 0 && rank < this.permits) {
        const granted = await grantNode(nodes, node, {
          trust,
          waiting: false,
          shared: rank + 1 < this.permits,
        });
        if (granted instanceof Granted) return granted;
      }
    } catch (error) {
      nodes.abandonLater(node);
      throw error;
    }
    if (this.nodes.get(node.key) === node) await nodes.abandon(node);
    return undefined;
  }

  /** We hold the gate: a permit if the lease nodes, ours included, fit in the permits. */
  private async takePermit(
    owner: string,
    queued: OwnNode | undefined,
    waiting: boolean,
    holder: HolderMetadata | undefined,
  ): Promise<AttemptResult> {
    const { nodes } = this;
    const { session } = nodes;
    const trust = session.trust;
    const node = queued ?? nodes.add(this.key(owner), this.leasePath, 'lease');
    for (let round = 1; ; round++) {
      const leases = session.newWatch();
      const data = nodeData(owner, holder); // the holder's record, as a lock's node (holders.ts)
      const children = await nodes.enqueue(node, data, waiting ? leases.watcher : undefined);
      if (children === undefined) {
        leases.watch.cancel();
        if (round >= MAX_ROUNDS) throw new Error(`semaphore "${this.name}": our lease node keeps vanishing`);
        node.path = node.name = undefined; // force-unlocked: create it again
        continue;
      }
      if (children.length <= this.permits) {
        leases.watch.cancel();
        const more = children.length < this.permits;
        const granted = await grantNode(nodes, node, { trust, waiting, shared: more });
        if (granted === 'vanished') {
          node.path = node.name = undefined;
          continue;
        }
        if (granted instanceof Granted)
          await this.gate.release(owner); // the next may try
        else if (!waiting) await this.giveUp(owner);
        return granted;
      }
      if (!waiting) {
        await this.giveUp(owner);
        return new Busy(undefined);
      }
      // Full: keep the gate, wake when a lease goes or the stored count changes.
      const count = session.newWatch();
      const seen = await session.getData(this.base, count.watcher).catch(() => {
        count.watch.cancel();
        return undefined;
      });
      if (seen !== undefined && Number(seen.data.toString()) !== this.permits) {
        // setPermits changed the count after checkPermits read it: this watch was set on the new
        // count and would not fire for that change, and the waiter slept until its wait ran out
        // (seen in a CI run). Look again now: checkPermits refuses it.
        leases.watch.cancel();
        count.watch.cancel();
        return new Busy(0);
      }
      return new Busy(undefined, either(leases.watch, count.watch));
    }
  }

  /** Deletes the owner's pending lease node, then leaves (or frees) the gate. */
  private async giveUp(owner: string): Promise<void> {
    const { node } = this.nodes.current(this.key(owner));
    if (node !== undefined && node.holds === 0) await this.nodes.abandon(node);
    if (this.gate.held(owner)) await this.gate.release(owner);
    else this.gate.leave(owner, false);
  }

  release(owner: string): Promise<ReleaseResult> {
    return this.nodes.serialize(this.key(owner), () => releaseNode(this.nodes, this.key(owner)));
  }

  async extend(owner: string): Promise<ExtendStatus> {
    const { node } = this.nodes.current(this.key(owner));
    return node && node.holds > 0 && !node.gone ? 'extended' : 'expired';
  }

  leave(owner: string, won: boolean): void {
    if (won) return;
    void this.nodes.serialize(this.key(owner), () => this.giveUp(owner)).catch(() => undefined); // reported
  }

  inspect(): Promise<LockInfo> {
    // The gate's holder may have a lease node beyond the permits while it waits: not a holder. A
    // holder's node ranked below the permits when it was granted and only moves up, so the holders
    // are among the first `permits` nodes (with, for a moment, a waiter's about to be granted).
    return this.nodes.session.retryRead(async () => {
      const holding = sortQueue(await this.nodes.children(this.leasePath)).slice(0, this.permits);
      const heldBy = await readHolders(this.nodes.session, this.leasePath, holding);
      return { held: holding.length > 0, holders: holding.length, remainingMs: undefined, heldBy };
    });
  }

  /** Stores a new permit count for every client (waiters watching it re-check). */
  async setPermits(permits: number): Promise<void> {
    const data = Buffer.from(String(permits));
    for (;;) {
      try {
        await this.nodes.session.setData(this.base, data, -1);
        return;
      } catch (error) {
        if (codeOf(error) !== NO_NODE) throw error;
      }
      try {
        await createWithParents(this.nodes.session, this.base, data, zookeeper.CreateMode.PERSISTENT);
        return;
      } catch (error) {
        if (codeOf(error) !== NODE_EXISTS) throw error;
      }
    }
  }

  /** Deletes every lease node (the holders' watches tell them). */
  async forceUnlock(): Promise<boolean> {
    const leases = sortQueue(await this.nodes.children(this.leasePath));
    let deleted = false;
    for (const { name } of leases) {
      try {
        await this.nodes.session.remove(`${this.leasePath}/${name}`);
        deleted = true;
      } catch (error) {
        if (codeOf(error) !== NO_NODE) throw error;
      }
    }
    return deleted;
  }

  /** The stored count must be ours (the first acquire stores it): two limits must never be in force. */
  private async checkPermits(): Promise<void> {
    const { session } = this.nodes;
    for (;;) {
      try {
        const { data, stat } = await session.getData(this.base);
        if (data.length === 0) {
          // Made without a count (as a parent by a create that raced the first acquire): claim it.
          await session
            .setData(this.base, Buffer.from(String(this.permits)), stat.version)
            .catch(() => undefined);
          continue;
        }
        const stored = Number(data.toString());
        if (stored !== this.permits) throw new PermitsMismatchError(this.name, this.permits, stored);
        return;
      } catch (error) {
        if (codeOf(error) !== NO_NODE) throw error;
      }
      try {
        const data = Buffer.from(String(this.permits));
        await createWithParents(session, this.base, data, zookeeper.CreateMode.PERSISTENT);
        return;
      } catch (error) {
        if (codeOf(error) !== NODE_EXISTS) throw error;
      }
    }
  }
}

function either(a: Watch, b: Watch): Watch {
  return {
    changed: Promise.race([a.changed, b.changed]),
    cancel: () => {
      a.cancel();
      b.cancel();
    },
  };
}
