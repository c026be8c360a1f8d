import type { Watch } from '../backend/index.js';

/**
 * The one-shot waits of a ZooKeeper session: watches given to reads, and waits for the next
 * connection. All fire when the session ends — ZooKeeper never delivers the watches of an expired
 * session, and its waiters must try again, in the next one.
 */
export class SessionWaits {
  private readonly watches = new Set<() => void>();
  private readonly reconnected = new Set<() => void>();

  /** A watcher for a read and the watch it settles (on its event, or when the session ends). */
  newWatch(): { watcher: () => void; watch: Watch } {
    let resolve!: () => void;
    const changed = new Promise<void>((settle) => (resolve = settle));
    const fire = () => {
      this.watches.delete(fire);
      resolve();
    };
    this.watches.add(fire);
    return { watcher: fire, watch: { changed, cancel: () => this.watches.delete(fire) } };
  }

  /** Settles on the next connection, or when the session ends. */
  nextConnection(): Watch {
    let resolve!: () => void;
    const changed = new Promise<void>((settle) => (resolve = settle));
    const fire = () => {
      this.reconnected.delete(fire);
      resolve();
    };
    this.reconnected.add(fire);
    return { changed, cancel: () => this.reconnected.delete(fire) };
  }

  /** A connection is up: whoever waited for one looks again. */
  connected(): void {
    for (const fire of [...this.reconnected]) fire();
  }

  /** The session ended (or the client closed): every watch and wait fires. */
  fireAll(): void {
    for (const fire of [...this.watches, ...this.reconnected]) fire();
  }
}
