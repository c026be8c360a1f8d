import type { SubscribeWakes, Wake } from '../backend/index.js';
import type { Pool, PoolClient } from './driver.js';

const ANY: Wake = Object.freeze({ to: 'any' });

/**
 * LISTEN for the wake-up channels of one lock client (semaphore releases), on one connection taken
 * from the pool the first time a waiter subscribes and kept until close(). Channel names are made by
 * keys.ts (plain identifiers). A lost connection is reported and made again at once, listening to
 * every channel still wanted; wake-ups sent meanwhile are missed, which waiters survive by their
 * recheck (PERMIT_RECHECK_MS).
 */
export class Listener {
  private readonly channels = new Map<string, Set<(wake: Wake) => void>>();
  private connection: Promise<PoolClient> | undefined;
  private closed = false;

  constructor(
    private readonly pool: Pool,
    private readonly report: (error: unknown) => void,
  ) {}

  readonly subscribe: SubscribeWakes = async (channel, onWake) => {
    let listeners = this.channels.get(channel);
    const fresh = listeners === undefined;
    if (listeners === undefined) this.channels.set(channel, (listeners = new Set()));
    listeners.add(onWake);
    const unsubscribe = () => {
      listeners.delete(onWake);
      if (listeners.size > 0 || this.channels.get(channel) !== listeners) return;
      this.channels.delete(channel);
      this.connection
        ?.then((client) => client.query(`UNLISTEN ${channel}`))
        .catch((error: unknown) => this.report(error));
    };
    try {
      const client = await this.connect();
      if (fresh) await client.query(`LISTEN ${channel}`);
    } catch (error) {
      unsubscribe();
      throw error;
    }
    return unsubscribe;
  };

  async close(): Promise<void> {
    this.closed = true;
    const connection = this.connection;
    this.connection = undefined;
    const client = await connection?.catch(() => undefined);
    client?.release(true); // a listening connection is not pooled again
  }

  private connect(): Promise<PoolClient> {
    if (this.closed) return Promise.reject(new Error('the lock client was closed'));
    if (this.connection) return this.connection;
    const made = (async () => {
      const client = await this.pool.connect();
      client.on('notification', ({ channel }) => {
        for (const onWake of this.channels.get(channel) ?? []) onWake(ANY);
      });
      client.on('error', (error) => this.lost(client, error));
      // Every channel wanted so far: after a lost connection, those of the waiters still waiting.
      for (const channel of this.channels.keys()) await client.query(`LISTEN ${channel}`);
      return client;
    })();
    this.connection = made;
    made.catch(() => {
      if (this.connection === made) this.connection = undefined; // the next subscriber tries again
    });
    return made;
  }

  private lost(client: PoolClient, error: Error): void {
    this.report(error);
    const current = this.connection;
    this.connection = undefined;
    void current?.then((c) => c === client && c.release(error)).catch(() => undefined);
    if (!this.closed && this.channels.size > 0) this.connect().catch((e: unknown) => this.report(e));
  }
}
