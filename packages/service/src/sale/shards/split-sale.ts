import type { ScriptRunner } from 'lockstock/redis';
import type { SaleContext } from '../context/context.js';
import { createGroup, type SaleRedis } from '../redis.js';
import type { Sale } from '../types.js';
import {
  initialShares,
  layoutKey,
  layoutKeys,
  layoutOf,
  type LayoutCache,
  type SaleLayout,
} from './layout.js';
import { partScripts } from './scripts.js';

/**
 * SaleService's split sales: putting a new one into Redis part by part, and counting what its parts
 * still offer. (A split sale Redis lost part of is rebuilt by recovery/, never warmed here.)
 */
export class SplitSales {
  private readonly scripts: ScriptRunner;
  private readonly redis: SaleRedis;
  private readonly prefix: string;

  constructor(
    private readonly context: SaleContext,
    private readonly layouts: LayoutCache,
  ) {
    ({ redis: this.redis, prefix: this.prefix, scripts: this.scripts } = context);
  }

  /**
   * Puts a new split sale into Redis: its layout on the sale's own tag, then each part with its share
   * of `remaining`, its window and its stream's group. A part Redis has already is left as it is; a
   * split sale Redis lost part of is rebuilt from the record (recovery), never warmed.
   */
  async warm(sale: Sale, layout: SaleLayout, remaining: number): Promise<boolean> {
    await this.redis.set(layoutKey(sale.id, this.prefix), layout.tags.join(','));
    this.layouts.remember(layout);
    const shares = initialShares(remaining, layout.tags.length);
    const warmed = await Promise.all(
      layoutKeys(layout, this.prefix).map(async (keys) => {
        const done = await this.scripts.run(
          partScripts.warm,
          [keys.stock, keys.notBefore, keys.open, keys.version, keys.restock],
          [
            started(sale, this.context.now()) ? 0 : sale.startsAt.getTime(),
            sale.endsAt.getTime(),
            sale.perUserLimit,
            shares[keys.part] ?? 0,
          ],
        );
        await createGroup(this.redis, keys.stream);
        return done === 1;
      }),
    );
    await this.redis.sadd(this.context.keys.activeSales, sale.id);
    return warmed.some(Boolean);
  }

  /**
   * Units a split sale still offers: every part's stock plus the units in flight between parts (a
   * transfer's units count at its donor until it is finished, and may briefly count twice). A part
   * Redis does not have makes it the record's count, as for a sale Redis lost.
   */
  async remaining(sale: Sale & { persistedSold: number }): Promise<number> {
    const parts = layoutKeys(layoutOf(sale.id, sale.partTags), this.prefix);
    // One MGET per part: each part's keys live on their own slot.
    const counts = await Promise.all(parts.map((keys) => this.redis.mget(keys.stock, keys.inflight)));
    if (counts.some(([stock]) => stock === null)) return sale.stock - sale.persistedSold;
    return Math.min(
      sale.stock,
      counts.reduce((sum, [stock, inflight]) => sum + Number(stock) + Number(inflight ?? 0), 0),
    );
  }
}

const started = (sale: Sale, now: number) => sale.startsAt.getTime() <= now;
