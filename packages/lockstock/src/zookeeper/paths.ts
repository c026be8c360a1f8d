import { randomUUID } from 'node:crypto';
import type { Stat } from 'node-zookeeper-client';
import { InvalidLockOptionError } from '../locks/errors.js';

/**
 * Where each family keeps its znodes, under the client's root (default /lockstock):
 * - `<root>/locks/<name>`: one queue for the mutex, the reentrant and the fair lock of a name;
 * - `<root>/rw/<name>`: readers and writers in one queue (Curator's InterProcessReadWriteLock);
 * - `<root>/semaphores/<name>` (its data: the permit count), with `/gate` and `/leases` below;
 * - `<root>/latches/<name>` (its data: the count); `<root>/elections/<name>`: the candidates' queue.
 * Queue parents (a lock's, a read-write lock's, an election's, a semaphore's gate and leases) are
 * container nodes: the server deletes each once its last child is gone (ZooKeeper 3.5+, checked every
 * `znode.container.checkIntervalMs`, a minute by default), so a lock name leaves nothing behind. A
 * semaphore's base node (its permit count) and a latch (its count, deleted at zero) are persistent.
 */
export type Family = 'locks' | 'rw' | 'semaphores' | 'latches' | 'elections';

export const DEFAULT_ROOT = '/lockstock';

/** A root path: absolute, no trailing slash, no empty, `.` or `..` segment. */
export function validateRoot(root: unknown): string {
  if (
    typeof root !== 'string' ||
    !root.startsWith('/') ||
    root.length < 2 ||
    root.endsWith('/') ||
    root
      .split('/')
      .slice(1)
      .some((segment) => segment === '' || segment === '.' || segment === '..') ||
    // Characters ZooKeeper refuses in a path (control characters, surrogates, private use).
    [...root].some(
      (c) => c < ' ' || (c >= '\u007f' && c <= '\u009f') || (c >= '\ud800' && c <= '\uf8ff') || c >= '\ufff0',
    )
  ) {
    throw new InvalidLockOptionError('root', 'an absolute ZooKeeper path such as /lockstock', root);
  }
  return root;
}

/**
 * A lock name as one path segment: percent-encoded (so `/` and the characters ZooKeeper refuses
 * never reach a path), dots too (`.` and `..` are not node names); the empty name is `%`, which no
 * encoding produces.
 */
export function encodeName(name: string): string {
  return encodeURIComponent(name).replace(/\./g, '%2E') || '%';
}

export function lockPath(root: string, family: Family, name: string): string {
  return `${root}/${family}/${encodeName(name)}`;
}

/**
 * The name a node is created with: Curator's protection (`_c_<guid>-`) so that after a connection
 * loss during the create its creator finds it among the children instead of leaving an orphan that
 * blocks the queue until the session ends; then its type; ZooKeeper appends a 10-digit sequence.
 */
export function protectedPrefix(type: string): string {
  return `_c_${randomUUID()}-${type}-`;
}

/** One child of a queue, in the order ZooKeeper gave it (its sequence number). */
export interface QueueEntry {
  readonly name: string;
  readonly type: string;
  readonly sequence: number;
}

const QUEUE_NODE = /^_c_[0-9a-f-]{36}-([a-z]+)-(\d{10})$/;

/**
 * The queue's nodes in sequence order. A tie is a downgrading reader beside its writer (see
 * ReadQueue): the writer first, so the write lock still shows at the head while it is held.
 */
export function sortQueue(children: readonly string[]): QueueEntry[] {
  const queue: QueueEntry[] = [];
  for (const name of children) {
    const match = QUEUE_NODE.exec(name);
    if (match) queue.push({ name, type: match[1]!, sequence: Number(match[2]) });
  }
  return queue.sort((a, b) => a.sequence - b.sequence || (a.type > b.type ? -1 : a.type < b.type ? 1 : 0));
}

/** The sequence a sequential node's name ends with, as ZooKeeper formats it. */
export const formatSequence = (sequence: number): string => String(sequence).padStart(10, '0');

/**
 * A node's fencing token: its czxid, the id of the transaction that created it. zxids grow with every
 * write of the ensemble (a new leader's epoch lifts the high 32 bits), so tokens strictly increase per
 * lock — across sessions, clients and leader changes — but are not consecutive.
 */
export function tokenOf(stat: Stat): number {
  const zxid = stat.czxid.readBigInt64BE(0);
  if (zxid < 0n || zxid > BigInt(Number.MAX_SAFE_INTEGER)) {
    throw new RangeError(`czxid ${zxid} is no safe integer: it cannot be a fencing token`);
  }
  return Number(zxid);
}
