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
} from '../backend/index.js';
import { LockLostError } from '../locks/errors.js';
import { grantNode, releaseNode, watchOwnNode, type SeenNode } from './grant.js';
import { nodeData, readHolders } from './holders.js';
import type { OwnNode, OwnNodes } from './nodes.js';
import { sortQueue, type QueueEntry } from './paths.js';
import { codeOf, NO_NODE, unanswered } from './session.js';

/** Whether the node at `index` of the sorted queue holds the lock, else the node its waiter watches. */
export type Verdict = { readonly granted: true } | { readonly granted: false; readonly watch: string };

export interface QueueOptions {
  /** The same owner acquiring again adds a hold to its node (else it is refused until it releases). */
  readonly reentrant: boolean;
  /** Node type in its name (`lock`, `read`, `write`...). */
  readonly type: string;
  /** A waiter whose session ended (its place in the queue went with it) fails instead of queueing anew. */
  readonly abortWaitOnSessionLoss?: boolean;
  /** No fencing token nor loss watch is needed (an internal gate): one read less per grant. */
  readonly internal?: boolean;
}

/** Rounds of "our node vanished, queue again" before an attempt gives up (a forceUnlock storm). */
const MAX_ROUNDS = 5;

/**
 * One lock as a queue of ephemeral sequential znodes under `parent` (Curator's LockInternals): an
 * attempt creates the owner's node (once: later attempts find it), reads the children, and either
 * holds — `decide` says — or watches the one node it waits for (its predecessor: no herd; only that
 * node's deletion wakes it). ZooKeeper orders the waiters ('server-order'). A waiter that leaves
 * deletes its node; a first try that is refused (`waiting: false`) leaves none behind. A grant reads
 * the node's czxid (the fencing token) and watches the node, so a hold deleted behind its back
 * (forceUnlock) is lost at once.
 */
export abstract class QueueResource implements LockResource {
  readonly wakeChannel = undefined;
  readonly leases = 'none' as const;
  readonly ordering = 'server-order' as const;
  readonly handsOff = false;
  /** Shared kinds say so in their grants: the next local waiter may try at once. */
  protected readonly shared: boolean = false;

  constructor(
    protected readonly nodes: OwnNodes,
    readonly name: string,
    /** The queue's znode; also the wait key (kinds sharing a queue share the room). */
    readonly parent: string,
    protected readonly options: QueueOptions,
  ) {}

  get waitKey(): string {
    return this.parent;
  }

  /** The connection error while the client has no connection (a timed-out wait says so). */
  unreachable(): BackendUnreachableError | undefined {
    return this.nodes.session.unreachableNow();
  }

  protected abstract decide(queue: readonly QueueEntry[], index: number): Verdict;

  /** The owner's entry among this client's nodes (each queue node also carries its owner as data). */
  protected key(owner: string): string {
    return `${this.parent}\0${this.options.type}\0${owner}`;
  }

  /** The owner's live hold in this queue, if any. */
  held(owner: string): OwnNode | undefined {
    const { node } = this.nodes.current(this.key(owner));
    return node && node.holds > 0 && !node.gone ? node : undefined;
  }

  /** Whether the owner has a node waiting in this queue. */
  queued(owner: string): boolean {
    const { node } = this.nodes.current(this.key(owner));
    return node !== undefined && node.holds === 0;
  }

  attempt(request: AttemptRequest): Promise<AttemptResult> {
    return this.nodes.serialize(this.key(request.owner), () => this.attemptNow(request));
  }

  /**
   * Checked before queueing: a refusal of its own (an upgrade), or a grant without queueing (whose
   * node carries `holder`, as a queued one does).
   */
  protected before(
    _owner: string,
    _queued: OwnNode | undefined,
    _holder: HolderMetadata | undefined,
  ): Promise<AttemptResult | undefined> | undefined {
    return undefined;
  }

  private async attemptNow({ owner, waiting, holder }: AttemptRequest): Promise<AttemptResult> {
    const { nodes } = this;
    const { session } = nodes;
    const current = nodes.current(this.key(owner));
    // Seen by this look, or by an earlier one of another path (which dropped the node first).
    const stale = nodes.takeLostWait(this.key(owner)) ?? current.stale;
    let node = current.node;
    if (stale && stale.holds === 0 && this.options.abortWaitOnSessionLoss) {
      // Its place in the queue went with its session: an election campaign ends there.
      throw new LockLostError(this.name, 'session_lost', owner, 0, { cause: 'the ZooKeeper session ended' });
    }
    if (node?.gone) {
      node.drop(); // deleted behind our back: start over
      node = undefined;
    }
    if (node && node.holds > 0) {
      if (this.options.reentrant) {
        node.holds++;
        return new Granted(node.token, this.shared, node.lost);
      }
      // One hold per owner: refused until it is released.
      return new Busy(undefined, waiting ? dropWatch(node) : undefined);
    }
    // No connection: a waiter sleeps until there is one (or fails once connectTimeoutMs passed),
    // rather than queueing calls in the driver that a waitMs could not cut short.
    if (waiting && session.disconnected) return session.rideOut();
    const early = await this.before(owner, node, holder);
    if (early !== undefined) return early;
    const trust = session.trust;
    const created = node === undefined; // made by this try: a refused first try deletes it
    node ??= nodes.add(this.key(owner), this.parent, this.options.type);
    const queued = node;
    try {
      for (let round = 1; ; round++) {
        // A lock's hold watches its own node (lost when deleted behind its back): armed with the create.
        const own = this.options.internal ? undefined : watchOwnNode(nodes, node);
        // The node's data is the holder's record (holders.ts), written with the create: inspect() reads
        // it. Written once per node: acquiredAt is when the attempt that created it was made (it queued).
        const joined = await nodes.join(node, nodeData(owner, holder), own?.watcher);
        const queue = joined?.queue;
        const index = queue?.findIndex((entry) => entry.name === node.name) ?? -1;
        if (joined === undefined || queue === undefined || index < 0) {
          // Our node is gone (force-unlocked while we waited): queue again, at the end.
          if (round >= MAX_ROUNDS) throw new Error(`lock "${this.name}": our queue node keeps vanishing`);
          node.path = node.name = undefined;
          continue;
        }
        const verdict = this.decide(queue, index);
        if (verdict.granted) {
          const seen = own && joined.own ? { stat: joined.own.stat, lost: own.lost } : undefined;
          const granted = await this.grant(node, trust, waiting, seen);
          if (granted !== 'vanished') {
            node.alone = joined.alone;
            return granted;
          }
          node.path = node.name = undefined;
          continue;
        }
        if (!waiting) {
          if (created) await nodes.abandon(node);
          return new Busy(undefined);
        }
        const { watcher, watch } = session.newWatch();
        try {
          // getData, not exists: no watch is left behind on a node that is already gone (Curator).
          await session.getData(`${this.parent}/${verdict.watch}`, watcher);
          return new Busy(undefined, watch);
        } catch (error) {
          watch.cancel();
          if (codeOf(error) !== NO_NODE) throw error;
          // What we would watch went meanwhile: look again.
        }
      }
    } catch (error) {
      // A waiter rides out a lost connection (Curator retries it): it looks again once connected
      // (its node, if the create went through, is found by its prefix), or in a new session.
      if (waiting && unanswered(error)) return session.rideOut(error);
      // A first try that failed (a create whose answer never came) must not leave a node behind;
      // a waiter's is deleted by its leave.
      if (!waiting && created) nodes.abandonLater(queued);
      throw error;
    }
  }

  protected grant(
    node: OwnNode,
    trust: number,
    waiting: boolean,
    seen?: SeenNode,
  ): Promise<AttemptResult | 'vanished'> {
    return grantNode(this.nodes, node, {
      trust,
      waiting,
      shared: this.shared,
      internal: this.options.internal,
      seen,
    });
  }

  release(owner: string): Promise<ReleaseResult> {
    return this.nodes.serialize(this.key(owner), () => releaseNode(this.nodes, this.key(owner)));
  }

  /** Holds have no lease here: an extend only says whether the hold is still ours. */
  async extend(owner: string): Promise<ExtendStatus> {
    return this.held(owner) ? 'extended' : 'expired';
  }

  leave(owner: string, won: boolean): void {
    if (won) return;
    void this.nodes
      .serialize(this.key(owner), async () => {
        const { node } = this.nodes.current(this.key(owner));
        this.nodes.takeLostWait(this.key(owner)); // the waiter is gone: nobody will ask any more
        if (node !== undefined && node.holds === 0) await this.nodes.abandon(node);
      })
      .catch(() => undefined); // reported by abandon
  }

  async holdCount(owner: string): Promise<number> {
    return this.held(owner)?.holds ?? 0;
  }

  /**
   * The holders' nodes, and who they are from each one's data (a node gone since the list is left out);
   * retried through a reconnection, as every read.
   */
  inspect(): Promise<LockInfo> {
    return this.nodes.session.retryRead(async () => {
      const queue = sortQueue(await this.nodes.children(this.parent));
      const holding = this.holders(queue);
      const holders = holding.length;
      const heldBy = await readHolders(this.nodes.session, this.parent, holding);
      const waiting = this.countsWaiters ? queue.length - holders : undefined;
      return { held: holders > 0, holders, remainingMs: undefined, heldBy, waiting };
    });
  }

  /**
   * Whether every node of the queue that does not hold is a waiter of this lock: not for a read-write
   * lock, whose one queue holds both sides (a node behind a reader may be a reader that holds too).
   */
  protected readonly countsWaiters: boolean = true;

  /** The nodes that hold the lock right now (the head, for an exclusive queue). */
  protected holders(queue: readonly QueueEntry[]): QueueEntry[] {
    return queue.slice(0, 1);
  }

  /** Deletes every holder's node, whoever it is; their watches tell them. True if any was held. */
  async forceUnlock(): Promise<boolean> {
    const holders = this.holders(sortQueue(await this.nodes.children(this.parent)));
    let deleted = false;
    for (const { name } of holders) {
      try {
        await this.nodes.session.remove(`${this.parent}/${name}`);
        deleted = true;
      } catch (error) {
        if (codeOf(error) !== NO_NODE) throw error;
      }
    }
    return deleted;
  }
}

/** Settles when the owner's own hold ends here (it waits for itself: one hold per owner). */
export function dropWatch(node: OwnNode): { changed: Promise<void>; cancel(): void } {
  return { changed: node.dropped, cancel: () => undefined };
}

/** An exclusive queue: the head holds; each waiter watches the node just before it. */
export class ExclusiveQueue extends QueueResource {
  protected decide(queue: readonly QueueEntry[], index: number): Verdict {
    return index === 0 ? { granted: true } : { granted: false, watch: queue[index - 1]!.name };
  }
}
