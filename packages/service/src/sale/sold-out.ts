import { duplicateClient } from 'lockstock/redis';
import type { SaleKeyspace } from './keys.js';
import { silentLogger, type Logger } from './logger.js';
import type { SaleRedis } from './redis.js';

export interface SoldOutCacheOptions {
  /** Sales remembered (and subscribed to) at most; the oldest is forgotten first. @default 1024 */
  maxSales?: number;
  logger?: Logger;
}

interface Entry {
  /** The sale's restock channel; a split sale has one per part (every part can give units back). */
  readonly channels: readonly string[];
  /** Redis confirmed the subscription to every one of the sale's restock channels. */
  subscribed: boolean;
  /** Bumped by every restock message and every lost connection: a reply older than that is stale. */
  generation: number;
  /** performance.now() until which the sale is sold out (0: not known to be). */
  soldOutUntil: number;
}

/**
 * The sold-out fast path: after a sale sells out, the flood of attempts that follows is answered from
 * memory instead of Redis. Whatever returns units (a cancellation, an expiry, a repair) publishes on
 * the sale's restock shard channel from inside its script; every process listens and forgets the
 * sale at once.
 *
 * A sold-out reply is remembered only if it cannot hide a restock: the process must have been
 * subscribed (confirmed by Redis) before the reservation was sent — then any restock executed after
 * the reservation reaches it — and no restock message or lost connection may have arrived while the
 * reply was on its way (`ticket` / `exhausted` compare generations; the message and the reply travel
 * on different connections, in either order). A lost subscriber connection forgets every sale: messages
 * sent meanwhile are lost. A memory lasts at most until the sale's end (Redis then answers `ended`).
 * So the service answers sold out while units are available for no longer than a message takes.
 */
export class SoldOutCache {
  private readonly sales = new Map<string, Entry>();
  private readonly byChannel = new Map<string, string>();
  private connection: SaleRedis | undefined;
  private everReady = false;
  private closed = false;
  /** Connections lost so far: a subscription confirmed across a loss does not count. */
  private losses = 0;
  private readonly redis: SaleRedis;
  private readonly keys: SaleKeyspace;
  private readonly maxSales: number;
  private readonly logger: Logger;

  /**
   * `sale`: the process's sale context (context/context.ts), of which this takes only the connection
   * and the keys: the cache sits below the context's layer, as split-reserver.ts reads it.
   */
  constructor(
    sale: { readonly redis: SaleRedis; readonly keys: SaleKeyspace },
    options: SoldOutCacheOptions = {},
  ) {
    ({ redis: this.redis, keys: this.keys } = sale);
    this.maxSales = options.maxSales ?? 1024;
    this.logger = options.logger ?? silentLogger;
  }

  /** Whether the sale is known to have no unit left: answer sold out without asking Redis. */
  isSoldOut(saleId: string): boolean {
    const entry = this.sales.get(saleId);
    return entry !== undefined && entry.soldOutUntil > performance.now();
  }

  /** Taken just before a reservation is sent; handed back to `exhausted` with a sold-out reply. */
  ticket(saleId: string): number {
    const entry = this.sales.get(saleId);
    return entry?.subscribed ? entry.generation : -1;
  }

  /**
   * A reservation sent with `ticket` found no unit left; the sale ends in `msUntilEnd`. A split sale
   * names its parts' restock channels (and calls this only when every part was proven empty).
   */
  exhausted(saleId: string, ticket: number, msUntilEnd: number, channels?: readonly string[]): void {
    if (this.closed) return;
    const entry = this.sales.get(saleId);
    if (!entry) {
      this.track(saleId, channels); // remembered from the next sold-out reply on, once subscribed
      return;
    }
    if (ticket < 0 || !entry.subscribed || entry.generation !== ticket || msUntilEnd <= 0) return;
    entry.soldOutUntil = performance.now() + msUntilEnd;
  }

  /** Forgets every sale and closes the subscriber connection. */
  async close(): Promise<void> {
    this.closed = true;
    this.sales.clear();
    this.byChannel.clear();
    const connection = this.connection;
    this.connection = undefined;
    if (connection) await connection.quit().catch(() => connection.disconnect());
  }

  private track(saleId: string, channels?: readonly string[]): void {
    if (this.sales.size >= this.maxSales) this.forget(this.sales.keys().next().value as string);
    const entry: Entry = {
      channels: channels ?? [this.keys.sale(saleId).restock],
      subscribed: false,
      generation: 0,
      soldOutUntil: 0,
    };
    this.sales.set(saleId, entry);
    for (const channel of entry.channels) this.byChannel.set(channel, saleId);
    this.subscribe(saleId, entry);
  }

  private forget(saleId: string): void {
    const entry = this.sales.get(saleId);
    if (!entry) return;
    this.sales.delete(saleId);
    for (const channel of entry.channels) {
      this.byChannel.delete(channel);
      this.connection?.sunsubscribe(channel).catch((error: Error) => this.report(error));
    }
  }

  private subscribe(saleId: string, entry: Entry): void {
    const losses = this.losses;
    const connection = this.connect();
    // One SSUBSCRIBE per channel: a split sale's channels are on different slots.
    Promise.all(entry.channels.map((channel) => connection.ssubscribe(channel))).then(
      () => {
        // Still the same subscription (no loss in between): replies sent from now on may be kept.
        if (this.sales.get(saleId) === entry && this.losses === losses) entry.subscribed = true;
      },
      (error: Error) => {
        this.report(error);
        if (this.sales.get(saleId) === entry) this.forget(saleId); // the next sold-out reply retries
      },
    );
  }

  private connect(): SaleRedis {
    if (this.connection) return this.connection;
    const connection = duplicateClient(this.redis);
    connection.on('smessage', (channel: string) => this.restocked(channel));
    connection.on('close', () => this.lost());
    connection.on('ready', () => {
      // Back after a loss: subscribe again and wait for Redis to confirm before trusting replies.
      if (this.everReady) for (const [saleId, entry] of this.sales) this.subscribe(saleId, entry);
      this.everReady = true;
    });
    connection.on('error', (error: Error) => this.report(error));
    this.connection = connection;
    return connection;
  }

  private restocked(channel: string): void {
    const saleId = this.byChannel.get(channel);
    const entry = saleId === undefined ? undefined : this.sales.get(saleId);
    if (!entry) return;
    entry.generation++;
    entry.soldOutUntil = 0;
  }

  private lost(): void {
    this.losses++;
    for (const entry of this.sales.values()) {
      entry.subscribed = false;
      entry.generation++;
      entry.soldOutUntil = 0;
    }
  }

  private report(error: Error): void {
    if (!this.closed) this.logger.warn({ err: error }, 'sold-out cache: restock subscription failed');
  }
}
