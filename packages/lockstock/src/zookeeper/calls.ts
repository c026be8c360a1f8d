import type { Client, Event as ZooKeeperEvent, Stat } from 'node-zookeeper-client';
import { monotonicNow, type Watch } from '../backend/index.js';
import { codeOf, UNANSWERED, ZooKeeperSessionError, type Done, type DriverError } from './errors.js';

/** Tries of a read (retryRead): each after a reconnection, so a few cover a session's end. */
const READ_RETRIES = 5;

/**
 * The calls made in a ZooKeeper session, typed: each is one driver request through `call`, which the
 * session bounds by its timeouts (ZooKeeperSession.call), and reads may be sent again through a
 * reconnection (retryRead).
 */
export abstract class SessionCalls {
  /** One driver call on the session's current client, bounded by the session's timeouts. */
  protected abstract call<T>(run: (zk: Client, done: Done<T>) => void): Promise<T>;
  /** Settles once connected, or once the client has been without a connection for connectTimeoutMs. */
  protected abstract whenReachable(): Watch;
  /** The session timeout in force. */
  abstract timeoutMs(): number;

  create(path: string, data: Buffer, mode: number): Promise<string> {
    return this.call<string>((zk, done) => zk.create(path, data, mode, done));
  }

  remove(path: string, version = -1): Promise<void> {
    return this.call<void>((zk, done) => zk.remove(path, version, done));
  }

  getChildren(path: string, watcher?: (event: ZooKeeperEvent) => void): Promise<string[]> {
    return this.call<string[]>((zk, done) =>
      watcher ? zk.getChildren(path, watcher, done) : zk.getChildren(path, done),
    );
  }

  getData(path: string, watcher?: (event: ZooKeeperEvent) => void): Promise<{ data: Buffer; stat: Stat }> {
    return this.call((zk, done: Done<{ data: Buffer; stat: Stat }>) => {
      const answer = (error: DriverError, data: Buffer | undefined, stat: Stat) =>
        done(error, { data: data ?? Buffer.alloc(0), stat });
      if (watcher) zk.getData(path, watcher, answer);
      else zk.getData(path, answer);
    });
  }

  /** The node's stat, or undefined when there is none. */
  exists(path: string, watcher?: (event: ZooKeeperEvent) => void): Promise<Stat | undefined> {
    return this.call((zk, done: Done<Stat | undefined>) => {
      const answer = (error: DriverError, stat: Stat | null) => done(error, stat ?? undefined);
      if (watcher) zk.exists(path, watcher, answer);
      else zk.exists(path, answer);
    });
  }

  setData(path: string, data: Buffer, version: number): Promise<Stat> {
    return this.call<Stat>((zk, done) => zk.setData(path, data, version, done));
  }

  /**
   * A read retried through a reconnection (Curator's RetryLoop): a read is safe to repeat, and one in
   * flight when the connection drops (a session moved or expired on the server) fails with the
   * driver's CONNECTION_LOSS though the next connection — or the next session — answers it. It is
   * sent again once connected, for at most a session timeout after its first failure (and
   * READ_RETRIES times); a client without a connection for connectTimeoutMs fails with the
   * connection error, as every call does, and a closed client at once.
   */
  async retryRead<T>(read: () => Promise<T>): Promise<T> {
    let deadline: number | undefined;
    for (let attempt = 1; ; attempt++) {
      try {
        return await read();
      } catch (error) {
        const lost =
          UNANSWERED.has(codeOf(error) ?? -1) ||
          (error instanceof ZooKeeperSessionError && error.state !== 'closed');
        deadline ??= monotonicNow() + this.timeoutMs();
        if (!lost || attempt >= READ_RETRIES || monotonicNow() >= deadline) throw error;
        await this.whenReachable().changed;
      }
    }
  }
}
