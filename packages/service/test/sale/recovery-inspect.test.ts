import { setTimeout as delay } from 'node:timers/promises';
import { describe, expect, it } from 'vitest';
import { saleKeys } from '../../src/sale/keys.js';
import { inspectSale, type SaleCondition } from '../../src/sale/recovery/inspect.js';
import { recoveryQueries } from '../../src/sale/recovery/queries.js';
import type { Queryable } from '../../src/sale/store/db.js';
import { useSaleStack } from '../helpers/sale.js';

const env = useSaleStack();

describe('comparing a selling sale with the record', () => {
  it('never finds Redis behind while reservations are appended and recorded meanwhile', async () => {
    const sale = await env.service.createSale({ name: 'inspected while selling', stock: 1_000_000 });
    const keys = saleKeys(sale.id);
    // A busy process reaches the database late (in `serve` the record is behind a message port to
    // the order thread): each check's query of the record waits 20 ms before it runs. Meanwhile the
    // pipeline records new reservations within milliseconds of their purchase.
    const slowRecord: Queryable = {
      query: async (sql, params) => {
        if (sql === recoveryQueries.newestEntries) await delay(20);
        return env.db.query(sql, params);
      },
      exec: (sql) => env.db.exec(sql),
    };
    const pipeline = env.pipeline({ batchSize: 20, blockMs: 5 });
    pipeline.start();
    let selling = true;
    const buyers = Array.from({ length: 4 }, async (_, loop) => {
      for (let i = 0; selling; i++) {
        await env.service.buy({ saleId: sale.id, userId: `u${loop}x${i}`, quantity: 1 });
      }
    });
    const seen: Array<SaleCondition['kind']> = [];
    try {
      for (let check = 0; check < 30; check++) {
        seen.push((await inspectSale(env.context, slowRecord, sale.id, keys)).kind);
      }
    } finally {
      selling = false;
      await Promise.all(buyers);
    }
    const recorded = await env.db.query<{ n: number }>(
      'SELECT count(*)::int AS n FROM orders WHERE sale_id = $1',
      [sale.id],
    );
    expect(recorded.rows[0]?.n).toBeGreaterThan(100); // the record did grow during the checks
    expect(new Set(seen)).toEqual(new Set(['ok']));
  });
});
