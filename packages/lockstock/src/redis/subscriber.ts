import type { RedisClient } from './connection.js';
import { duplicateClient } from './connection.js';

/** Receives the message published on the channel ('' after a reconnect: anything may have happened). */
type Listener = (message: string) => void;

/**
 * One pub/sub connection per lock client, shared by every waiter: subscriptions are reference
 * counted per channel, and messages fan out to local listeners. Uses sharded pub/sub
 * (SSUBSCRIBE, Redis >= 7), which works on a standalone server as well as on a cluster, where the
 * channel's hash tag puts it on the lock's own shard.
 *
 * Messages published while the connection is down are lost; when it comes back every listener is
 * called once, so waiters re-check the lock instead of sleeping until their fallback timer.
 */
export class SharedSubscriber {
  private connection: RedisClient | undefined;
  private readonly listeners = new Map<string, Set<Listener>>();
  private readonly subscribing = new Map<string, Promise<void>>();
  private everReady = false;

  constructor(
    private readonly source: RedisClient,
    private readonly onError: (error: Error) => void,
  ) {}

  private connect(): RedisClient {
    if (this.connection) return this.connection;
    const connection = duplicateClient(this.source);
    connection.on('smessage', (channel: string, message: string) => this.dispatch(channel, message));
    connection.on('ready', () => {
      if (this.everReady) for (const channel of this.listeners.keys()) this.dispatch(channel, '');
      this.everReady = true;
    });
    connection.on('error', (error: Error) => this.onError(error));
    this.connection = connection;
    return connection;
  }

  private dispatch(channel: string, message: string): void {
    const set = this.listeners.get(channel);
    if (set) for (const listener of [...set]) listener(message);
  }

  /**
   * Subscribes `listener` to `channel`; resolves once Redis has confirmed the subscription (a waiter
   * must not test the lock before that, or it could miss the release it is waiting for).
   * Returns the function that removes the listener again.
   */
  async subscribe(channel: string, listener: Listener): Promise<() => void> {
    let set = this.listeners.get(channel);
    if (!set) {
      set = new Set();
      this.listeners.set(channel, set);
      const connection = this.connect();
      const confirmed = connection.ssubscribe(channel).then(
        () => undefined,
        (error: unknown) => {
          this.listeners.delete(channel);
          throw error;
        },
      );
      this.subscribing.set(channel, confirmed);
      confirmed.finally(() => this.subscribing.delete(channel)).catch(() => undefined);
    }
    set.add(listener);
    await this.subscribing.get(channel);
    return () => this.unsubscribe(channel, listener);
  }

  private unsubscribe(channel: string, listener: Listener): void {
    const set = this.listeners.get(channel);
    if (!set?.delete(listener) || set.size > 0) return;
    this.listeners.delete(channel);
    this.connection?.sunsubscribe(channel).catch((error: Error) => this.onError(error));
  }

  get channelCount(): number {
    return this.listeners.size;
  }

  async close(): Promise<void> {
    const connection = this.connection;
    this.connection = undefined;
    this.listeners.clear();
    if (connection) await connection.quit().catch(() => connection.disconnect());
  }
}
