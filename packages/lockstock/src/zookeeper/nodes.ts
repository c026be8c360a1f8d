import * as zookeeper from 'node-zookeeper-client';
import type { Event as ZooKeeperEvent, Stat } from 'node-zookeeper-client';
import type { BackendHost, LockLostReason } from '../backend/index.js';
import { formatSequence, protectedPrefix, sortQueue, type QueueEntry } from './paths.js';
import { QuietQueues } from './quiet.js';
import { codeOf, NO_NODE, NODE_EXISTS, unanswered, type ZooKeeperSession } from './session.js';

/**
 * A node this client created for one owner in one queue: its place while it waits, its hold once
 * granted (re-entry counts here, in the process, as Curator's InterProcessMutex counts per thread).
 */
export interface OwnNode {
  readonly key: string;
  readonly parent: string;
  /** `_c_<guid>-<type>-`: how its creator recognises it after a create whose answer was lost. */
  readonly prefix: string;
  /** The session it was created in: a node of an ended session is gone. */
  readonly generation: number;
  path: string | undefined;
  name: string | undefined;
  /** A create was sent but not answered: the node may exist. Look for the prefix before creating. */
  uncertain: boolean;
  /** Holds of the owner (0 while it waits). */
  holds: number;
  token: number;
  /** Settles when a watch sees the held node deleted behind our back (forceUnlock, an admin). */
  lost: Promise<LockLostReason> | undefined;
  /** The held node was deleted behind our back: re-entry must not pretend it is still held. */
  gone: boolean;
  /** Its queue held this node alone at some moment after it was created (see QuietQueues). */
  alone: boolean;
  /** Settles when the entry is dropped (its node released or abandoned). */
  readonly dropped: Promise<void>;
  drop(): void;
}

/**
 * This client's own nodes, by queue and owner. Resources stay stateless (the client caches them and
 * may drop them); what outlives a call lives here, with the session. Operations on one entry run one
 * after the other (a waiter's attempt, its leave, a re-entry), so a node is never created twice.
 */
export class OwnNodes {
  private readonly entries = new Map<string, OwnNode>();
  private readonly chains = new Map<string, Promise<unknown>>();
  /**
   * Waiting nodes an ended session took, by key, until their waiter's next attempt learns of it:
   * `current()` drops a stale node the first time anyone looks (holdCount, inspect of a hold, leave),
   * and the attempt must still see that its place in the queue went with the session.
   */
  private readonly lostWaits = new Map<string, OwnNode>();
  readonly quiet: QuietQueues;

  constructor(
    readonly session: ZooKeeperSession,
    private readonly host: BackendHost,
  ) {
    this.quiet = new QuietQueues(session);
    session.onHoldsLost((ended) => this.holdsLost(ended));
  }

  get(key: string): OwnNode | undefined {
    return this.entries.get(key);
  }

  /** The entry of `key` in the current session; one of an ended session is dropped first. */
  current(key: string): { node: OwnNode | undefined; stale: OwnNode | undefined } {
    const node = this.entries.get(key);
    if (node && node.generation !== this.session.generation) {
      node.drop();
      if (node.holds === 0) this.lostWaits.set(key, node);
      return { node: undefined, stale: node };
    }
    return { node, stale: undefined };
  }

  /** The waiting node of `key` an ended session took, once (see lostWaits); undefined if none. */
  takeLostWait(key: string): OwnNode | undefined {
    const node = this.lostWaits.get(key);
    this.lostWaits.delete(key);
    return node;
  }

  add(key: string, parent: string, type: string): OwnNode {
    let settle!: () => void;
    const dropped = new Promise<void>((resolve) => (settle = resolve));
    const node: OwnNode = {
      key,
      parent,
      prefix: protectedPrefix(type),
      generation: this.session.generation,
      path: undefined,
      name: undefined,
      uncertain: false,
      holds: 0,
      token: 0,
      lost: undefined,
      gone: false,
      alone: false,
      dropped,
      drop: () => {
        if (this.entries.get(key) === node) this.entries.delete(key);
        settle();
      },
    };
    this.entries.set(key, node);
    return node;
  }

  /** Runs `task` after every earlier task of `key` settled. */
  serialize<T>(key: string, task: () => Promise<T>): Promise<T> {
    const previous = this.chains.get(key) ?? Promise.resolve();
    const next = previous.then(task, task);
    const settled = next.then(
      () => undefined,
      () => undefined,
    );
    this.chains.set(key, settled);
    void settled.then(() => {
      if (this.chains.get(key) === settled) this.chains.delete(key);
    });
    return next;
  }

  /**
   * Creates the node if it has no path yet: ephemeral and sequential (or plain, for a `name` given),
   * protected (after an unanswered create, finds its own instead of creating a second), its parents
   * made when missing (the first lock of a name, or a parent someone removed).
   */
  async ensure(node: OwnNode, data: Buffer, name?: string): Promise<void> {
    if (node.path !== undefined) return;
    if (node.uncertain) {
      const found = (await this.children(node.parent)).find((child) => child.startsWith(node.prefix));
      node.uncertain = false;
      if (found !== undefined) return this.place(node, `${node.parent}/${found}`);
    }
    const mode =
      name === undefined ? zookeeper.CreateMode.EPHEMERAL_SEQUENTIAL : zookeeper.CreateMode.EPHEMERAL;
    const path = `${node.parent}/${node.prefix}${name ?? ''}`;
    try {
      this.place(node, await createWithParents(this.session, path, data, mode));
    } catch (error) {
      if (codeOf(error) !== NO_NODE && codeOf(error) !== NODE_EXISTS) node.uncertain = true;
      throw error;
    }
  }

  /**
   * Creates the node if needed and lists its queue, in one round trip: the driver sends both at once
   * and ZooKeeper answers a session's requests in order, so the list already holds the new node.
   * Undefined when the node is not in the queue (deleted behind our back): queue again.
   */
  async enqueue(node: OwnNode, data: Buffer, watcher?: () => void): Promise<QueueEntry[] | undefined> {
    const creating = node.path === undefined;
    const ensuring = this.ensure(node, data); // sends the create now (unless it must look first)
    const listing = this.children(node.parent, watcher);
    listing.catch(() => undefined); // awaited below, unless the create fails first
    await ensuring;
    let queue = sortQueue(await listing);
    if (creating && !queue.some((entry) => entry.name === node.name)) {
      // The create had to make the parents (or looked for a lost create) first: list again.
      queue = sortQueue(await this.children(node.parent, watcher));
    }
    return queue.some((entry) => entry.name === node.name) ? queue : undefined;
  }

  /**
   * A lock queue's `enqueue`: creates the node if needed and learns its place. When this client had
   * the queue to itself and the create's sequence proves nobody came by since (QuietQueues), the
   * queue is known without listing it. `ownWatcher`, if given, is armed on our node by a read sent
   * with the create (at the sequence expected), whose stat gives the fencing token: `own` carries it
   * when that read found the node (`stat` undefined: the expected node was ours but is gone).
   * `alone`: the queue held our node alone when we looked.
   */
  async join(
    node: OwnNode,
    data: Buffer,
    ownWatcher?: (event: ZooKeeperEvent) => void,
  ): Promise<{ queue: QueueEntry[]; alone: boolean; own?: { stat: Stat | undefined } } | undefined> {
    const expected = node.path === undefined && !node.uncertain ? this.quiet.take(node.parent) : undefined;
    if (expected === undefined) return this.list(node, data);
    const name = `${node.prefix}${formatSequence(expected)}`;
    const ensuring = this.ensure(node, data); // sent first: the read below sees the node
    const reading = ownWatcher ? this.readNode(`${node.parent}/${name}`, ownWatcher) : undefined;
    reading?.catch(() => undefined); // awaited below, unless the create fails first
    await ensuring;
    const stat = await reading;
    if (node.name === name && this.quiet.guarded(node.parent)) {
      return { queue: sortQueue([name]), alone: true, ...(reading ? { own: { stat } } : {}) };
    }
    // Someone came by: list the queue, as always (the read found nothing, or our node: then it serves).
    const listed = await this.list(node, data);
    return listed && { ...listed, ...(stat ? { own: { stat } } : {}) };
  }

  /** `join` without knowledge: create (if needed) and list in one round trip. */
  private async list(
    node: OwnNode,
    data: Buffer,
  ): Promise<{ queue: QueueEntry[]; alone: boolean } | undefined> {
    const queue = await this.enqueue(node, data);
    return queue && { queue, alone: queue.length === 1 };
  }

  /** The node's stat, read with `watcher` armed on it; undefined (and no watch left) when it is gone. */
  private async readNode(path: string, watcher: (event: ZooKeeperEvent) => void): Promise<Stat | undefined> {
    try {
      return (await this.session.getData(path, watcher)).stat;
    } catch (error) {
      if (codeOf(error) === NO_NODE) return undefined;
      throw error;
    }
  }

  /** Children of `parent`; none when it does not exist (yet). */
  async children(parent: string, watcher?: () => void): Promise<string[]> {
    try {
      return await this.session.getChildren(parent, watcher);
    } catch (error) {
      if (codeOf(error) === NO_NODE) return [];
      throw error;
    }
  }

  /**
   * Drops the entry and deletes its node. Should the delete fail (no answer), it is retried on every
   * reconnection while the session lasts (Curator's guaranteed delete): an abandoned node would
   * block the queue until the session ends.
   */
  async abandon(node: OwnNode): Promise<void> {
    node.drop();
    await this.deleteGuaranteed(node);
  }

  /** As `abandon`, in the background (failures go to the client's connectionError event). */
  abandonLater(node: OwnNode): void {
    this.abandon(node).catch((error: unknown) => this.host.reportError(error));
  }

  private async deleteGuaranteed(node: OwnNode): Promise<void> {
    const { session } = this;
    while (node.generation === session.generation) {
      try {
        if (node.path === undefined && node.uncertain) {
          const found = (await this.children(node.parent)).find((child) => child.startsWith(node.prefix));
          node.uncertain = false;
          if (found !== undefined) node.path = `${node.parent}/${found}`;
        }
        if (node.path !== undefined) await session.remove(node.path);
        return;
      } catch (error) {
        if (codeOf(error) === NO_NODE) return;
        this.host.reportError(error);
        if (!unanswered(error) || node.generation !== session.generation) return;
        await session.whenConnected().changed; // or the session ended, or the client closed
        if (!session.connected) return;
      }
    }
  }

  private place(node: OwnNode, path: string): void {
    node.path = path;
    node.name = path.slice(node.parent.length + 1);
  }

  /**
   * Holds were lost (their signals aborted): their entries go — a release then says 'expired'. If
   * the session lives on (a suspension under the 'suspended' policy), their nodes would still block
   * everyone: they are deleted once the connection is back. Waiting entries stay: an attempt finds
   * them stale (an ended session) or still queued (a suspension).
   */
  private holdsLost(ended: boolean): void {
    for (const node of [...this.entries.values()]) {
      if (node.holds === 0) continue;
      if (ended) node.drop();
      else this.abandonLater(node);
    }
  }
}

/**
 * Creates `path`; when its parent is missing, makes the parents and creates again. The parent of an
 * ephemeral node is a queue (of a lock, an election, a semaphore's gate or leases): it is made a
 * container, which the server deletes once its last child is gone — a lock name leaves nothing
 * behind. The server may reap it between our mkdirs and our create (its children just went): then
 * the create finds no parent and makes it again.
 */
export async function createWithParents(
  session: ZooKeeperSession,
  path: string,
  data: Buffer,
  mode: number,
): Promise<string> {
  const container =
    mode === zookeeper.CreateMode.EPHEMERAL || mode === zookeeper.CreateMode.EPHEMERAL_SEQUENTIAL;
  for (let attempt = 1; ; attempt++) {
    try {
      return await session.create(path, data, mode);
    } catch (error) {
      if (codeOf(error) !== NO_NODE || attempt >= 5) throw error;
      await session.mkdirs(path.slice(0, path.lastIndexOf('/')), { container });
    }
  }
}
