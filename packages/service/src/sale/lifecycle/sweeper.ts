import { setTimeout as delay } from 'node:timers/promises';
import type { ScriptRunner } from 'lockstock/redis';
import type { SaleContext } from '../context/context.js';
import { silentLogger, type Logger } from '../logger.js';
import type { SaleRedis } from '../redis.js';
import { isSplit, LayoutCache, layoutKeys, type PartKeys } from '../shards/layout.js';
import { partScripts } from '../shards/scripts.js';
import { Transfers } from '../shards/transfers.js';
import { DEFAULT_OFFER_MS, validOfferMs } from '../waitlist/settings.js';
import { lifecycleScripts, SETTLED_TTL_MS } from './scripts.js';

export interface ExpirySweeperOptions {
  /** Orders expired per script call (a sale with more due is swept again at once). @default 500 */
  batchSize?: number;
  /** Longest pause between rounds, ms (also how soon a new sale's first deadline is seen). @default 1000 */
  maxIdleMs?: number;
  logger?: Logger;
  /** Called with the number of orders each round expired (metrics). */
  onExpired?: (count: number) => void;
  /**
   * Whether this process may expire a sale's orders now (the recovery gate: not before its Redis
   * connection was checked against the record after it came back); a sale refused is skipped this
   * round. @default every sale
   */
  admits?: (saleId: string) => boolean;
  /** Layouts of split sales (a process with the record passes one that asks it). @default Redis's */
  layouts?: LayoutCache;
  /**
   * A transfer between the parts of a split sale still pending this long after its debit (Redis
   * clock) was left by a process that died or failed mid-way: the sweeper finishes it, ms.
   * @default 2000
   */
  staleTransferMs?: number;
  /** Called with the number of stale transfers each round finished (metrics). */
  onTransfersFinished?: (count: number) => void;
  /**
   * How long an offer to a waitlisted buyer holds the unit an expiry or a lapsed offer gives back, ms.
   * @default DEFAULT_OFFER_MS
   */
  offerMs?: number;
  /** Called with the number of offers to waitlisted buyers each round let lapse (metrics). */
  onOffersLapsed?: (count: number) => void;
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
  private readonly redis: SaleRedis;
  private readonly options: Required<
    Omit<ExpirySweeperOptions, 'onExpired' | 'admits' | 'layouts' | 'onTransfersFinished' | 'onOffersLapsed'>
  >;
  private readonly layouts: LayoutCache;
  private readonly transfers: Transfers;
  private running = false;
  private loop: Promise<void> | undefined;
  private wake: AbortController | undefined;

  constructor(
    private readonly context: SaleContext,
    private readonly config: ExpirySweeperOptions = {},
  ) {
    this.redis = context.redis;
    this.scripts = context.scripts;
    this.options = {
      batchSize: config.batchSize ?? 500,
      maxIdleMs: config.maxIdleMs ?? 1000,
      logger: config.logger ?? silentLogger,
      staleTransferMs: config.staleTransferMs ?? 2_000,
      offerMs: validOfferMs(config.offerMs ?? DEFAULT_OFFER_MS),
    };
    this.layouts = config.layouts ?? new LayoutCache(context);
    this.transfers = new Transfers(context.redis, this.scripts);
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
   * One round over every active sale (each part of a split sale, whose stale transfers it also
   * finishes). Returns the orders expired and how soon the next deadline is due (ms, by Redis's clock;
   * undefined when no sale has an unpaid order). Public for tests.
   */
  async sweep(): Promise<{ expired: number; lapsed: number; nextInMs: number | undefined }> {
    let expired = 0;
    let lapsed = 0;
    let finished = 0;
    let nextInMs: number | undefined;
    for (const saleId of await this.redis.smembers(this.context.keys.activeSales)) {
      if (this.config.admits && !this.config.admits(saleId)) continue;
      const layout = await this.layouts.get(saleId);
      const parts = isSplit(layout) ? layoutKeys(layout, this.context.prefix) : undefined;
      for (const keys of parts ?? [this.context.keys.sale(saleId)]) {
        for (;;) {
          // A split sale's parts have no waitlist (expire-part.lua); a sale of one part lets its
          // lapsed offers pass on in the same step (expire.lua).
          const [count, next, passed = 0] = (await this.scripts.run(
            parts ? partScripts.expire : lifecycleScripts.expire,
            [
              keys.deadlines,
              keys.settled,
              keys.stock,
              keys.buyers,
              keys.stream,
              keys.restock,
              keys.recovering,
              ...(parts ? [(keys as PartKeys).version] : [keys.open, keys.waitlist, keys.offers]),
            ],
            [this.options.batchSize, SETTLED_TTL_MS, ...(parts ? [] : [this.options.offerMs])],
          )) as [number, number, number?];
          expired += count;
          lapsed += passed;
          if ((count < this.options.batchSize && passed < this.options.batchSize) || next !== 0) {
            if (next >= 0) nextInMs = Math.min(nextInMs ?? next, next);
            break;
          }
        }
      }
      if (parts) finished += await this.finishStaleTransfers(parts);
    }
    if (expired > 0) this.config.onExpired?.(expired);
    if (lapsed > 0) this.config.onOffersLapsed?.(lapsed);
    if (finished > 0) this.config.onTransfersFinished?.(finished);
    return { expired, lapsed, nextInMs };
  }

  /**
   * Finishes the transfers of a split sale that are pending longer than `staleTransferMs`: their
   * process died or failed between the debit and the finish. Finishing a live one is harmless (credit
   * and finish are idempotent); the wait only keeps the sweeper out of the buyers' way.
   */
  private async finishStaleTransfers(parts: readonly PartKeys[]): Promise<number> {
    const [seconds, micros] = (await this.redis.time()) as [string | number, string | number];
    const olderThanMs =
      Number(seconds) * 1000 + Math.floor(Number(micros) / 1000) - this.options.staleTransferMs;
    let finished = 0;
    for (const part of parts) finished += await this.transfers.finishPending(part, parts, olderThanMs);
    if (finished > 0)
      this.options.logger.warn({ finished }, 'finished transfers between sale parts left pending');
    return finished;
  }
}
