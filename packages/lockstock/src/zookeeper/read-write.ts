import type { AttemptResult, HolderMetadata } from '../backend/index.js';
import { LockUpgradeError } from '../locks/errors.js';
import { nodeData } from './holders.js';
import type { OwnNode, OwnNodes } from './nodes.js';
import { formatSequence, sortQueue, type QueueEntry } from './paths.js';
import { ExclusiveQueue, QueueResource, type Verdict } from './queue.js';

/**
 * Curator's InterProcessReadWriteLock: readers and writers queue in one sequence of nodes. A writer
 * holds at the head; a reader holds when no writer is before it, and otherwise watches the nearest
 * writer before it (readers behind one writer all wake when it goes: they all get in). A waiting
 * writer keeps every later reader out, so readers cannot starve writers. Both sides re-enter.
 */
export function readWriteQueues(
  nodes: OwnNodes,
  name: string,
  parent: string,
): { read: ReadQueue; write: WriteQueue } {
  const write = new WriteQueue(nodes, name, parent, { reentrant: true, type: 'write' });
  const read = new ReadQueue(nodes, name, parent, { reentrant: true, type: 'read' });
  read.writeSide = write;
  write.readSide = read;
  return { read, write };
}

export class WriteQueue extends ExclusiveQueue {
  protected override readonly countsWaiters = false;
  readSide!: ReadQueue;

  /** No upgrade: a reader asking for the write side would wait for its own read hold for ever. */
  protected override before(owner: string): undefined {
    if (this.readSide.held(owner)) throw new LockUpgradeError(this.name, owner);
    return undefined;
  }

  protected override holders(queue: readonly QueueEntry[]): QueueEntry[] {
    return queue[0]?.type === 'write' ? [queue[0]] : [];
  }
}

export class ReadQueue extends QueueResource {
  protected override readonly countsWaiters = false;
  protected override readonly shared = true;
  writeSide!: WriteQueue;

  protected decide(queue: readonly QueueEntry[], index: number): Verdict {
    for (let i = index - 1; i >= 0; i--) {
      if (queue[i]!.type === 'write') return { granted: false, watch: queue[i]!.name };
    }
    return { granted: true };
  }

  /**
   * Downgrade: the write holder reads at once. Its read node takes the writer's sequence (a plain
   * ephemeral node, Curator's trick), so it sorts beside the writer: once the write lock is
   * released, the reader is at the head and later writers still wait behind it.
   */
  protected override async before(
    owner: string,
    queued: OwnNode | undefined,
    holder: HolderMetadata | undefined,
  ): Promise<AttemptResult | undefined> {
    const writer = this.writeSide.held(owner);
    if (queued !== undefined || writer?.name === undefined) return undefined;
    const sequence = sortQueue([writer.name])[0]?.sequence;
    if (sequence === undefined) return undefined;
    const trust = this.nodes.session.trust;
    const node = this.nodes.add(this.key(owner), this.parent, 'read');
    await this.nodes.ensure(node, nodeData(owner, holder), formatSequence(sequence));
    const granted = await this.grant(node, trust, false);
    if (granted !== 'vanished') return granted;
    node.drop();
    return undefined; // deleted at once (forceUnlock): queue as any reader
  }

  protected override holders(queue: readonly QueueEntry[]): QueueEntry[] {
    // Readers before the first writer, and one that downgrades from it (it shares its sequence).
    const writer = queue.find((entry) => entry.type === 'write');
    return queue.filter(
      (entry) => entry.type === 'read' && (writer === undefined || entry.sequence <= writer.sequence),
    );
  }
}
