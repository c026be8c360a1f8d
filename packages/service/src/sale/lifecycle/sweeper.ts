import { setTimeout as delay } from 'node:timers/promises';
import { DEFAULT_KEY_PREFIX, ScriptRunner } from 'lockstock/redis';
import { activeSalesKey, saleKeys } from '../keys.js';
import { silentLogger, type Logger } from '../logger.js';
import type { SaleRedis } from '../redis.js';
import { lifecycleScripts, SETTLED_TTL_MS } from './scripts.js';

export interface ExpirySweeperOptions {
  /** Orders expired per script call (a sale with more due is swept again at once). @default 500 */
  batchSize?: number;
  /** Longest pause between rounds, ms (also how soon a new sale's first deadline is seen). @default 1000 */
  maxIdleMs?: number;
  keyPrefix?: string;
  logger?: Logger;
  /** Called with the number of orders each round expired (metrics). */
  onExpired?: (count: number) => void;
  /**
   * Whether this process may expire a sale's orders now (the recovery gate: not before its Redis
   * connection was checked against the record after it came back); a sale refused is skipped this
   * round. @default every sale
   */
  admits?: (saleId: string) => boolean;
}

/**
 * The delay queue's consumer: expires unpaid orders whose deadline has passed, sale by sale, from the
 * sorted sets the order pipeline fills (expire.lua). Any number of sweepers may run, in any processes:
 * each order expires once (the script is atomic and settles through the sale's `settled` hash), and a
 * sweeper that dies mid-round leaves nothing half done. Between rounds it sleeps until the nearest
 * deadline (Redis's clock), at most `maxIdleMs`.
 */
export class ExpirySweeper {
  private readonly scripts: ScriptRunner;
  private readonly options: Required<Omit<ExpirySweeperOptions, 'onExpired' | 'admits'>>;
  private running = false;
  private loop: Promise<void> | undefined;
  private wake: AbortController | undefined;

  constructor(
    private readonly redis: SaleRedis,
    private readonly config: ExpirySweeperOptions = {},
  ) {
    this.scripts = new ScriptRunner(redis);
    this.options = {
      batchSize: config.batchSize ?? 500,
      maxIdleMs: config.maxIdleMs ?? 1000,
      keyPrefix: config.keyPrefix ?? DEFAULT_KEY_PREFIX,
      logger: config.logger ?? silentLogger,
    };
  }

  start(): void {
    if (this.running) return;
    this.running = true;
    this.loop = this.run();
  }

  async stop(): Promise<void> {
    this.running = false;
    this.wake?.abort();
    await this.loop;
  }

  private async run(): Promise<void> {
    while (this.running) {
      let idleMs = this.options.maxIdleMs;
      try {
        idleMs = Math.min(idleMs, (await this.sweep()).nextInMs ?? idleMs);
      } catch (error) {
        if (!this.running) break;
        this.options.logger.warn({ err: error }, 'expiry sweep failed; retrying');
      }
      this.wake = new AbortController();
      await delay(Math.max(1, idleMs), undefined, { signal: this.wake.signal }).catch(() => undefined);
    }
  }

  /**
   * One round over every active sale. Returns the orders expired and how soon the next deadline is
   * due (ms, by Redis's clock; undefined when no sale has an unpaid order). Public for tests.
   */
  async sweep(): Promise<{ expired: number; nextInMs: number | undefined }> {
    let expired = 0;
    let nextInMs: number | undefined;
    for (const saleId of await this.redis.smembers(activeSalesKey(this.options.keyPrefix))) {
      if (this.config.admits && !this.config.admits(saleId)) continue;
      const keys = saleKeys(saleId, this.options.keyPrefix);
      for (;;) {
        const [count, next] = (await this.scripts.run(
          lifecycleScripts.expire,
          [keys.deadlines, keys.settled, keys.stock, keys.buyers, keys.stream, keys.restock, keys.recovering],
          [this.options.batchSize, SETTLED_TTL_MS],
        )) as [number, number];
        expired += count;
        if (count < this.options.batchSize || next !== 0) {
          if (next >= 0) nextInMs = Math.min(nextInMs ?? next, next);
          break;
        }
      }
    }
    if (expired > 0) this.config.onExpired?.(expired);
    return { expired, nextInMs };
  }
}
