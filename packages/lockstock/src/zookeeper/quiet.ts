import { sortQueue } from './paths.js';
import type { ZooKeeperSession } from './session.js';

/**
 * Parents watched at once per connection, at most: each guard is a watch on the server and a
 * watcher in the driver that nothing can remove, so a client that locks millions of names must not
 * leave one per name. Beyond it, queues are listed as Curator does.
 */
const MAX_GUARDED = 1_024;

/**
 * What this client knows about queues it had to itself, so that taking such a lock again needs no
 * listing of the queue (Curator lists on every acquire; see ARCHITECTURE.md for what it costs).
 *
 * ZooKeeper numbers the sequential children of a parent from a counter that every create of a child
 * moves forward (sequential or not; a delete does not move it on ZooKeeper 3.8, it may on others —
 * test/zookeeper/quiet.test.ts checks the server). If our node numbered `s` was once alone in its
 * queue and we deleted it, and the next node we create there is numbered `s + 1`, nobody created a
 * child in between: every other child was gone before our look, none came since, so the new node is
 * alone and holds the lock. Any other number (a create came by, or deletes move the counter on this
 * server) means: list, as always — the rule can only ever skip a listing when it is certain.
 * A parent deleted and made again would restart its counter, so a number could match by chance:
 * each parent used this way is watched (an `exists` watch sent while our node still kept the parent
 * from being deleted), and what is known of it is dropped when that watch fires — ZooKeeper delivers
 * it before the answer of any later request — or when the connection changes.
 */
export class QuietQueues {
  /** Parent → the sequence the next node this client creates there gets if nobody came by. */
  private readonly expected = new Map<string, number>();
  /** Parent → the connection its guard watch was armed in (answered: the parent existed). */
  private readonly guards = new Map<string, number>();
  private readonly arming = new Set<string>();
  /** The connection the maps above are about; a new one starts them afresh. */
  private connection = -1;

  constructor(private readonly session: ZooKeeperSession) {}

  /**
   * The sequence to expect for a node created now under `parent` if the queue is still this
   * client's alone; undefined when nothing is known. Taken once: the next create consumes it.
   */
  take(parent: string): number | undefined {
    this.sync();
    const expected = this.expected.get(parent);
    this.expected.delete(parent);
    return expected !== undefined && this.guarded(parent) ? expected : undefined;
  }

  /** Whether the parent's guard watch stands in the current connection. */
  guarded(parent: string): boolean {
    this.sync();
    return this.session.connected && this.guards.get(parent) === this.session.connection;
  }

  /**
   * Called before deleting our node that was alone in its queue: arms the parent's guard if it has
   * none. Sent before the delete, so ZooKeeper handles it while our node keeps the parent in place.
   */
  arm(parent: string): void {
    if (this.guarded(parent) || this.arming.has(parent)) return;
    if (this.guards.size >= MAX_GUARDED && !this.guards.has(parent)) return;
    const connection = this.session.connection;
    this.arming.add(parent);
    const fired = () => this.forget(parent);
    this.session.exists(parent, fired).then(
      (stat) => {
        this.arming.delete(parent);
        if (stat !== undefined && connection === this.session.connection) this.guards.set(parent, connection);
      },
      () => this.arming.delete(parent),
    );
  }

  /** We deleted our node `name`, which was once alone in its queue under `parent`. */
  released(parent: string, name: string): void {
    const sequence = sortQueue([name])[0]?.sequence;
    if (sequence !== undefined && this.guarded(parent)) this.expected.set(parent, sequence + 1);
  }

  private sync(): void {
    if (this.connection === this.session.connection) return;
    this.connection = this.session.connection;
    this.guards.clear();
    this.expected.clear();
  }

  private forget(parent: string): void {
    this.guards.delete(parent);
    this.expected.delete(parent);
  }
}
