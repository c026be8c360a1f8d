import { duplicateClient, isCluster } from 'lockstock/redis';
import type { SaleContext } from '../context/context.js';
import { ORDER_GROUP } from '../keys.js';
import type { SaleRedis } from '../redis.js';
import { isSplit, layoutKeys, type LayoutCache } from '../shards/layout.js';
import { flattenReply, trimAcknowledged, type ReadEntry, type StreamsReply } from './stream.js';

/** How long the list of open sales' streams is trusted before it is read again, ms. */
const STREAMS_FRESH_MS = 1000;

export interface StreamReaderOptions {
  readonly consumer: string;
  /** Entries per read. */
  readonly batchSize: number;
  /** Entries pending this long with another consumer are taken over, ms. */
  readonly claimIdleMs: number;
  /** A split sale's streams are its parts' (one per part, each on its own slot). */
  readonly layouts: LayoutCache;
  /** Called after each read: reading is progress for the pipeline's lease (lease.ts). */
  readonly onRead: () => void;
}

/**
 * The order pipeline's side of the streams: which streams are open, reads through the consumer
 * group (blocking reads on a connection of their own), claims of abandoned entries, delivery counts
 * and trimming. It records nothing and acknowledges nothing: that is the recorder's (batch-recorder.ts).
 */
export class StreamReader {
  private readonly blocking: SaleRedis;
  /** On a Cluster, the stream the next idle round blocks on (see readEachSlot). */
  private blockOn = 0;
  private streams: string[] = [];
  private streamsReadAt = 0;

  private readonly redis: SaleRedis;

  constructor(
    private readonly context: SaleContext,
    private readonly options: StreamReaderOptions,
  ) {
    this.redis = context.redis;
    // Blocking reads need a connection of their own.
    this.blocking = duplicateClient(context.redis);
    this.blocking.on('error', () => undefined); // reported by the commands that fail
  }

  /** Ends a blocking read at once. */
  disconnect(): void {
    this.blocking.disconnect();
  }

  /** The streams of every open sale (a split sale's part streams), re-read at most once a second. */
  async openStreams(): Promise<string[]> {
    if (Date.now() - this.streamsReadAt > STREAMS_FRESH_MS) {
      const { keys, prefix } = this.context;
      const ids = await this.redis.smembers(keys.activeSales);
      const streams: string[] = [];
      for (const id of ids.sort()) {
        const layout = await this.options.layouts.get(id);
        if (isSplit(layout)) streams.push(...layoutKeys(layout, prefix).map((keys) => keys.stream));
        else streams.push(keys.sale(id).stream);
      }
      this.streams = streams;
      this.streamsReadAt = Date.now();
    }
    return this.streams;
  }

  /** This consumer's pending entries (`from` '0') or new ones ('>'), waiting up to `blockMs` for new. */
  async read(streams: string[], from: '0' | '>', blockMs: number): Promise<ReadEntry[]> {
    if (streams.length > 1 && isCluster(this.redis)) return this.readEachSlot(streams, from, blockMs);
    return this.readOnce(streams, from, blockMs);
  }

  /**
   * On a Cluster one XREADGROUP cannot span slots (each sale's stream has its own hash tag): read the
   * streams one by one, and when none has anything, block on one of them in turn for a share of the
   * wait — a flash sale's single hot stream is still a plain blocking read.
   */
  private async readEachSlot(streams: string[], from: '0' | '>', blockMs: number): Promise<ReadEntry[]> {
    const entries: ReadEntry[] = [];
    for (const stream of streams) {
      if (entries.length >= this.options.batchSize) break;
      entries.push(...(await this.readOnce([stream], from, 0)));
    }
    if (entries.length > 0 || blockMs === 0) return entries;
    this.blockOn = (this.blockOn + 1) % streams.length;
    const share = Math.max(10, Math.floor(blockMs / streams.length));
    return this.readOnce([streams[this.blockOn] as string], from, share);
  }

  private async readOnce(streams: string[], from: '0' | '>', blockMs: number): Promise<ReadEntry[]> {
    const args: Array<string | number> = [
      'GROUP',
      ORDER_GROUP,
      this.options.consumer,
      'COUNT',
      this.options.batchSize,
    ];
    if (blockMs > 0) args.push('BLOCK', blockMs);
    args.push('STREAMS', ...streams, ...streams.map(() => from));
    const client = blockMs > 0 ? this.blocking : this.redis;
    const reply = (await client.call('XREADGROUP', ...args)) as StreamsReply;
    this.options.onRead();
    return flattenReply(reply);
  }

  /** Takes over the entries of `stream` another consumer has left pending for `claimIdleMs`. */
  async claimAbandoned(stream: string): Promise<ReadEntry[]> {
    const [, entries] = (await this.redis.call(
      'XAUTOCLAIM',
      stream,
      ORDER_GROUP,
      this.options.consumer,
      this.options.claimIdleMs,
      '0-0',
      'COUNT',
      this.options.batchSize,
    )) as [string, Array<[string, string[] | null]>];
    return entries.map(([id, fields]) => ({ stream, id, fields: fields ?? [] }));
  }

  /** How many times the group has delivered `entry`. */
  async deliveries(entry: ReadEntry): Promise<number> {
    const rows = (await this.redis.xpending(entry.stream, ORDER_GROUP, entry.id, entry.id, 1)) as Array<
      [string, string, number, number]
    >;
    return Number(rows[0]?.[3] ?? 0);
  }

  /** Whether `entry` is gone from its stream (trimmed, or Redis restarted without it). */
  async isGone(entry: ReadEntry): Promise<boolean> {
    return this.redis.xrange(entry.stream, entry.id, entry.id).then(
      (found) => found.length === 0,
      () => true, // cannot tell: counted as gone
    );
  }

  async trim(streams: readonly string[]): Promise<void> {
    for (const stream of streams) await trimAcknowledged(this.redis, stream, ORDER_GROUP);
  }
}
