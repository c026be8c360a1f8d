import * as zookeeper from 'node-zookeeper-client';
import type { LatchResource, Watch } from '../backend/index.js';
import { createWithParents } from './nodes.js';
import { BAD_VERSION, codeOf, NO_NODE, NODE_EXISTS, unanswered, type ZooKeeperSession } from './session.js';

/**
 * A count-down latch (Curator has none; Redisson's semantics): a persistent node whose data is the
 * count, decremented with a version check (compare-and-set) and deleted by the count-down that
 * reaches zero. Waiters watch the node (getData, in watchCount): every change wakes them, and they are released
 * once it is gone. The count survives its clients (persistent), as Redisson's does.
 */
export class ZooKeeperLatch implements LatchResource {
  readonly wakeChannel = undefined; // waiters watch the node (watchCount)

  constructor(
    private readonly session: ZooKeeperSession,
    readonly name: string,
    readonly path: string,
  ) {}

  async trySetCount(count: number): Promise<boolean> {
    const data = Buffer.from(String(count));
    try {
      await createWithParents(this.session, this.path, data, zookeeper.CreateMode.PERSISTENT);
      return true;
    } catch (error) {
      if (codeOf(error) === NODE_EXISTS) return false; // counting down already
      throw error;
    }
  }

  async countDown(): Promise<number> {
    for (;;) {
      const read = await this.read();
      if (read === undefined) return 0;
      try {
        if (read.count <= 1) {
          await this.session.remove(this.path, read.version);
          return 0;
        }
        await this.session.setData(this.path, Buffer.from(String(read.count - 1)), read.version);
        return read.count - 1;
      } catch (error) {
        if (codeOf(error) === NO_NODE) return 0;
        if (codeOf(error) !== BAD_VERSION) throw error; // someone counted at the same time: again
      }
    }
  }

  async count(): Promise<number> {
    return (await this.read())?.count ?? 0;
  }

  /**
   * Undefined when the node is gone (released); else the watch of a getData on it: every change
   * fires it, and the waiter reads again. Without a connection, the wait rides it out (bounded).
   */
  async watchCount(): Promise<Watch | undefined> {
    const { watcher, watch } = this.session.newWatch();
    try {
      await this.session.getData(this.path, watcher);
      return watch;
    } catch (error) {
      watch.cancel();
      if (codeOf(error) === NO_NODE) return undefined;
      if (!unanswered(error)) throw error;
      // No connection: sleep until it is back (rideOut throws once that is past its bound).
      const reachable = this.session.rideOut(error).watch;
      if (reachable === undefined) throw error;
      return reachable;
    }
  }

  /** Deletes the count: every waiter is released. True if it was counting. */
  async forceUnlock(): Promise<boolean> {
    try {
      await this.session.remove(this.path);
      return true;
    } catch (error) {
      if (codeOf(error) === NO_NODE) return false;
      throw error;
    }
  }

  private async read(): Promise<{ count: number; version: number } | undefined> {
    try {
      const { data, stat } = await this.session.getData(this.path);
      return { count: Number(data.toString()) || 0, version: stat.version };
    } catch (error) {
      if (codeOf(error) === NO_NODE) return undefined;
      throw error;
    }
  }
}
