import type { RedisLockClient } from 'lockstock';
import type { Logger } from '../logger.js';
import { inspectPart } from './inspect-part.js';
import { layoutKey, layoutKeys, layoutOf, type PartKeys } from '../shards/layout.js';
import { rebuildPart, type PartRebuildReport } from './rebuild-part.js';
import type { Sale } from '../types.js';
import { describeCondition, type RebuildCause, type SaleCondition } from './inspect.js';
import type { RecoveryMonitorOptions } from './options.js';
import { underRecoveryLock } from './recovery-lock.js';

/** What the split-sale side shares with its RecoveryMonitor: its options, lock client and state. */
export interface SplitSaleRecoveryDeps extends RecoveryMonitorOptions {
  readonly logger: Logger;
  readonly locks: RedisLockClient;
  /** The monitor's closed sales and why; a split sale is closed while any part is damaged. */
  readonly blocked: Map<string, string>;
  /** The monitor's rebuilds under way, per sale. */
  readonly rebuilding: Map<string, Promise<void>>;
}

/**
 * RecoveryMonitor's split sales (shards/): each part is checked and rebuilt on its own, under a
 * lock of its own, while the sale stays closed as a whole.
 */
export class SplitSaleRecovery {
  constructor(private readonly deps: SplitSaleRecoveryDeps) {}

  /**
   * A split sale: each part compared with the record's newest entries of that part. The sale is closed
   * here while any part is not as the record (its other parts' Redis state is intact, but a buyer
   * cannot be told which part is whose without the sale), and each damaged part is rebuilt on its own
   * (recovery/rebuild-part.ts) under its own lock.
   */
  async check(sale: Sale): Promise<void> {
    const parts = layoutKeys(layoutOf(sale.id, sale.partTags), this.deps.context.prefix);
    const conditions = await Promise.all(
      parts.map((keys) => inspectPart(this.deps.context, this.deps.db, sale.id, keys)),
    );
    const damaged = parts
      .map((keys, i) => ({ keys, condition: conditions[i] as SaleCondition }))
      .filter(({ condition }) => condition.kind !== 'ok');
    if (damaged.length === 0) {
      // The layout key is what reservers learn the parts from: put back if Redis lost it. It lives on
      // the sale's own slot, with the room: that slot's master may hold no part, so losing it damages
      // no part, and the room (its admission state) goes back here too, before the layout.
      const key = layoutKey(sale.id, this.deps.context.prefix);
      if ((await this.deps.context.redis.exists(key)) === 0) {
        await this.deps.admission.restore(sale);
        await this.deps.context.redis.set(key, (sale.partTags ?? []).join(','));
      }
      if (this.deps.blocked.delete(sale.id)) this.deps.logger.info({ saleId: sale.id }, 'sale selling again');
      return;
    }
    const reason = damaged
      .map(
        ({ keys, condition }) =>
          `part ${keys.part}: ${describeCondition(condition as Exclude<SaleCondition, { kind: 'ok' }>)}`,
      )
      .join('; ');
    if (!this.deps.blocked.has(sale.id))
      this.deps.logger.warn({ saleId: sale.id, reason }, 'sale closed: Redis is not as the record');
    this.deps.blocked.set(sale.id, reason);
    const work: Promise<unknown>[] = [];
    for (const { keys, condition } of damaged) {
      if (condition.kind === 'recovering' && (await this.partLockOf(sale.id, keys.part).isLocked())) continue;
      work.push(
        this.rebuildPartNow(sale, keys, condition.kind as RebuildCause).catch((error: unknown) =>
          this.deps.logger.warn(
            { err: error, saleId: sale.id, part: keys.part },
            'rebuild failed; it is tried again',
          ),
        ),
      );
    }
    if (work.length === 0) return;
    const task = Promise.all(work)
      .then(() => undefined)
      .finally(() => this.deps.rebuilding.delete(sale.id));
    this.deps.rebuilding.set(sale.id, task);
  }

  private partLockOf(saleId: string, part: number) {
    return this.deps.locks.mutex(`sale:${saleId}:p${part}:recovery`);
  }

  /**
   * Rebuilds one part of a split sale from the record now, if it needs it (or `force`: reconcile found
   * its counts off) and this process gets the part's recovery lock (`reconcile --repair` calls it
   * directly). Undefined when nothing was rebuilt.
   */
  async rebuildPartNow(
    sale: Sale,
    keys: PartKeys,
    cause: RebuildCause = 'missing',
    options: { force?: boolean } = {},
  ): Promise<PartRebuildReport | undefined> {
    const lock = this.partLockOf(sale.id, keys.part);
    return underRecoveryLock(lock, this.deps.logger, sale.id, async (handle, token) => {
      const condition = await inspectPart(this.deps.context, this.deps.db, sale.id, keys);
      if (condition.kind === 'ok' && !options.force) return undefined;
      const began = performance.now();
      const report = await rebuildPart(this.deps, sale, layoutOf(sale.id, sale.partTags), keys.part, token);
      if (!report || handle.signal.aborted) {
        this.deps.logger.warn({ saleId: sale.id, part: keys.part }, 'rebuild superseded (lock or flag lost)');
        return undefined;
      }
      await this.deps.context.redis.sadd(this.deps.context.keys.activeSales, sale.id);
      const ms = Math.round(performance.now() - began);
      this.deps.logger.warn(
        { saleId: sale.id, cause, ms, ...report },
        'part of a split sale rebuilt from the record',
      );
      this.deps.onRebuilt?.(sale.id, cause, report, ms);
      return report;
    });
  }
}
