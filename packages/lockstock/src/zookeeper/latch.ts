import * as zookeeper from 'node-zookeeper-client';
import { Busy, monotonicNow, resolveAcquireOptions, type BackendHost } from '../backend/index.js';
import { InvalidLockOptionError } from '../locks/errors.js';
import type { CountDownLatch } from '../locks/types.js';
import { createWithParents } from './nodes.js';
import { BAD_VERSION, codeOf, NO_NODE, NODE_EXISTS, unanswered, type ZooKeeperSession } from './session.js';

const RELEASED = { value: true, more: true } as const;

/**
 * A count-down latch (Curator has none; Redisson's semantics): a persistent node whose data is the
 * count, decremented with a version check (compare-and-set) and deleted by the count-down that
 * reaches zero. Waiters watch the node (getData): every change wakes them, and they are released
 * once it is gone. The count survives its clients (persistent), as Redisson's does.
 */
export class ZooKeeperCountDownLatch implements CountDownLatch {
  constructor(
    private readonly session: ZooKeeperSession,
    private readonly host: BackendHost,
    readonly name: string,
    readonly path: string,
  ) {}

  async trySetCount(count: number): Promise<boolean> {
    if (!Number.isSafeInteger(count) || count < 1) {
      throw new InvalidLockOptionError('count', 'a positive integer', count);
    }
    this.host.assertOpen(this.name);
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
    this.host.assertOpen(this.name);
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
    this.host.assertOpen(this.name);
    return (await this.read())?.count ?? 0;
  }

  async wait(options: { waitMs?: number; signal?: AbortSignal } = {}): Promise<boolean> {
    const { waitMs, signal } = resolveAcquireOptions(options, Infinity);
    this.host.assertOpen(this.name);
    const startedAt = monotonicNow();
    if ((await this.count()) === 0) return true;
    const released = await this.host.waiters.wait<true, undefined>({
      key: this.path,
      lockName: this.name,
      channel: undefined,
      ordering: 'server-order', // every waiter checks on its own watch: all are released at zero
      owner: '',
      ticket: undefined,
      attempt: async () => {
        const { watcher, watch } = this.session.newWatch();
        try {
          await this.session.getData(this.path, watcher);
          return new Busy(undefined, watch);
        } catch (error) {
          watch.cancel();
          if (codeOf(error) === NO_NODE) return RELEASED;
          if (unanswered(error)) return this.session.rideOut(error); // ride it out (bounded)
          throw error;
        }
      },
      deadline: waitMs === Infinity ? Infinity : startedAt + waitMs,
      signal,
      abandon: () => undefined,
      heldUntil: () => Infinity,
      leave: () => undefined,
    });
    return released === true;
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
