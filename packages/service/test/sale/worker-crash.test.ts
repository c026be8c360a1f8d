import { describe, expect, it } from 'vitest';
import { saleKeys } from '../../src/sale/keys.js';
import { spawnCli } from '../helpers/cli.js';
import { useSaleStack } from '../helpers/sale.js';

const env = useSaleStack();

describe('a worker SIGKILLed mid-batch', () => {
  it.each(['before-commit', 'after-commit'] as const)(
    'loses nothing and duplicates nothing (%s)',
    async (point) => {
      const sale = await env.service.createSale({ name: `crash ${point}`, stock: 200 });
      const orderIds = new Set<string>();
      for (let i = 0; i < 120; i++) {
        const result = await env.service.buy({ saleId: sale.id, userId: `u${i}`, quantity: 1 });
        if (result.ok) orderIds.add(result.orderId);
      }
      const common = [
        'worker',
        '--redis',
        env.redisUrl,
        '--database',
        env.databaseUrl,
        '--claim-idle-ms',
        '500',
      ];
      const doomed = spawnCli([...common, '--batch-size', '50'], { LOCKSTOCK_FAULT: point });
      await doomed.waitForLine(new RegExp(`fault:${point}`)); // it holds a batch, mid-way
      doomed.kill('SIGKILL');
      await doomed.exited;

      const survivor = spawnCli(common);
      const keys = saleKeys(sale.id);
      // Observe the record until every reservation has its row and nothing is pending.
      for (;;) {
        const { rows } = await env.db.query<{ n: number }>(
          'SELECT count(*)::int AS n FROM orders WHERE sale_id = $1',
          [sale.id],
        );
        const pending = Number(((await env.redis.xpending(keys.stream, 'order-writers')) as unknown[])[0]);
        if (rows[0]?.n === orderIds.size && pending === 0) break;
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
      survivor.kill('SIGTERM');
      await survivor.exited;
      const { rows } = await env.db.query<{ id: string; status: string }>(
        'SELECT id::text AS id, status FROM orders WHERE sale_id = $1',
        [sale.id],
      );
      expect(new Set(rows.map((r) => r.id))).toEqual(orderIds);
      expect(rows.every((r) => r.status === 'confirmed')).toBe(true);
      const { rows: sold } = await env.db.query<{ sold: number }>('SELECT sold FROM sales WHERE id = $1', [
        sale.id,
      ]);
      expect(sold[0]?.sold).toBe(orderIds.size);
    },
  );
});
