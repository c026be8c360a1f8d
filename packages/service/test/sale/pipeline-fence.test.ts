import { describe, expect, it } from 'vitest';
import { fencePipelines } from '../../src/sale/recovery/fence.js';
import { Gate } from '../helpers/gate.js';
import { useSaleStack } from '../helpers/sale.js';
import { until } from '../helpers/until.js';

/**
 * The recovery fence between a rebuild and the order pipelines (recovery/fence.ts, pipeline/lease.ts),
 * without a Redis restart: what Redis still has of a dropped batch is delivered again.
 */
const env = useSaleStack();

async function confirmedOf(saleId: string): Promise<Set<string>> {
  const { rows } = await env.db.query<{ id: string }>(
    "SELECT id::text AS id FROM orders WHERE sale_id = $1 AND status = 'confirmed'",
    [saleId],
  );
  return new Set(rows.map((r) => r.id));
}

async function buyers(saleId: string, n: number): Promise<string[]> {
  const ids: string[] = [];
  for (let i = 0; i < n; i++) {
    const result = await env.service.buy({ saleId, userId: `u${i}`, quantity: 1 });
    if (!result.ok) throw new Error(`u${i} could not buy: ${result.code}`);
    ids.push(result.orderId);
  }
  return ids;
}

describe('the recovery fence', () => {
  it('an idle pipeline drains a new fence within about a second: the rebuild fences nobody out', async () => {
    const pipeline = env.pipeline({ blockMs: 100 });
    pipeline.start();
    await until('the pipeline registered', async () => {
      const { rowCount } = await env.db.query('SELECT 1 FROM pipeline_leases WHERE consumer = $1', [
        pipeline.consumer,
      ]);
      return rowCount === 1;
    });
    const report = await fencePipelines(env.db);
    expect(report.fencedOut).toEqual([]);
    // The pipeline sees the fence on its next lease renewal (every second); the wait limit is 30 s.
    expect(report.waitedMs).toBeLessThan(10_000);
    await pipeline.stop();
  });

  it('at its wait limit a rebuild fences out a live pipeline still holding a batch: the batch is refused, and what Redis still has is recorded when delivered again', async () => {
    const sale = await env.service.createSale({ name: 'fenced at the limit', stock: 10 });
    const orderIds = await buyers(sale.id, 3);
    const gate = new Gate();
    // A long lease, renewed while it waits: only the wait limit ends the rebuild's wait.
    const pipeline = env.pipeline({ leaseMs: 60_000, faults: { beforeCommit: gate.pass } });
    pipeline.start();
    try {
      await gate.reached;
      const report = await fencePipelines(env.db, { waitLimitMs: 300 });
      expect(report.fencedOut).toEqual([pipeline.consumer]);
      expect(report.waitedMs).toBeGreaterThanOrEqual(300);
      expect(await confirmedOf(sale.id)).toEqual(new Set());
      gate.open();
      await until('the orders recorded', async () => (await confirmedOf(sale.id)).size === 3);
      expect(await confirmedOf(sale.id)).toEqual(new Set(orderIds));
      expect(gate.arrivals).toBe(2); // refused once, recorded on redelivery
      const lost = (await env.metrics.ordersLost.get()).values;
      expect(lost.reduce((sum, v) => sum + v.value, 0)).toBe(0); // Redis still had them all
      const rejected = await env.db.query("SELECT 1 FROM orders WHERE sale_id = $1 AND status = 'rejected'", [
        sale.id,
      ]);
      expect(rejected.rowCount).toBe(0);
    } finally {
      gate.open();
    }
  });
});
