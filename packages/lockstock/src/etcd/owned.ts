import type { EtcdSession } from './session.js';

/**
 * A key this client put in a lock's queue for one owner: waiting, or holding. What lives only in the
 * client is what only the client can know — how many times the owner holds it (re-entries, and the
 * read holds of a read-write key beside its write holds), as Curator's InterProcessMutex keeps its
 * lock count in memory: the key's session ends with this process anyway, and with it every hold.
 */
export interface OwnedKey {
  /** The lock's queue directory. */
  readonly dir: string;
  readonly owner: string;
  readonly key: string;
  readonly session: EtcdSession;
  /** The key's create revision: its place in the queue, and its fencing token once it holds. */
  readonly revision: number;
  /** The holder record in the key's value after its mode ('' if none): a downgrade's rewrite keeps it. */
  readonly record: string;
  held: boolean;
  /** Holds on the key (re-entries; the write holds of a read-write key). */
  holds: number;
  /** The read holds of a read-write key. */
  reads: number;
}

/**
 * Every key this client put and has not deleted yet, by lock and owner, and — once held — by fencing
 * token (tokens are create revisions: unique in the whole etcd cluster). Entries of an ended session
 * stay until their owner releases or queues again: a lost hold can still be released, and its token
 * still finds its key for a guarded write (which etcd then refuses).
 */
export class OwnedKeys {
  private readonly byLock = new Map<string, Map<string, OwnedKey>>();
  private readonly byToken = new Map<number, OwnedKey>();

  get(dir: string, owner: string): OwnedKey | undefined {
    return this.byLock.get(dir)?.get(owner);
  }

  add(entry: Omit<OwnedKey, 'held' | 'holds' | 'reads'>): OwnedKey {
    const owned: OwnedKey = { ...entry, held: false, holds: 0, reads: 0 };
    let owners = this.byLock.get(entry.dir);
    if (owners === undefined) this.byLock.set(entry.dir, (owners = new Map()));
    const replaced = owners.get(entry.owner);
    if (replaced) this.byToken.delete(replaced.revision);
    owners.set(entry.owner, owned);
    return owned;
  }

  /** The key now holds the lock (its first hold). */
  hold(entry: OwnedKey): void {
    entry.held = true;
    this.byToken.set(entry.revision, entry);
  }

  byFencingToken(token: number): OwnedKey | undefined {
    return this.byToken.get(token);
  }

  delete(entry: OwnedKey): void {
    const owners = this.byLock.get(entry.dir);
    if (owners?.get(entry.owner) !== entry) return;
    owners.delete(entry.owner);
    if (owners.size === 0) this.byLock.delete(entry.dir);
    this.byToken.delete(entry.revision);
  }
}
