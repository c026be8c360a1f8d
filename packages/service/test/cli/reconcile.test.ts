import { describe, expect, it } from 'vitest';
import { saleKeys } from '../../src/sale/keys.js';
import { spawnCli } from '../helpers/cli.js';
import { redisState } from '../helpers/redis-state.js';
import { useSaleStack } from '../helpers/sale.js';

const env = useSaleStack();

/** Every key of a sale in Redis (its hash tag), idempotency keys included. */
async function saleKeysInRedis(saleId: string): Promise<string[]> {
  const keys: string[] = [];
  let cursor = '0';
  do {
    const [next, batch] = await env.redis.scan(cursor, 'MATCH', `*{sale:${saleId}}*`, 'COUNT', 1000);
    keys.push(...batch);
    cursor = next;
  } while (cursor !== '0');
  return keys;
}

async function reconcileCli(...extra: string[]) {
  const cli = spawnCli(['reconcile', '--redis', env.redisUrl, '--database', env.databaseUrl, ...extra]);
  let stdout = '';
  cli.child.stdout?.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  const [code] = (await cli.exited) as [number | null];
  return { code, stdout, output: cli.output() };
}

describe('lockstock reconcile', () => {
  it('without --repair only reports: a sale Redis lost stays lost (it used to be warmed with no buyers)', async () => {
    const sale = await env.service.createSale({ name: 'reconcile cli', stock: 5 });
    for (const user of ['r1', 'r2']) {
      expect(await env.service.buy({ saleId: sale.id, userId: user, quantity: 1 })).toMatchObject({
        ok: true,
      });
    }
    await env.pipeline().drain();
    await env.redis.del(...(await saleKeysInRedis(sale.id))); // Redis lost the sale
    const before = await redisState(env.redis);

    const report = await reconcileCli('--json');
    expect(report.code, report.output).toBe(2); // drift found
    // pino writes its log lines (one line each) to stdout too; the report is the indented JSON.
    const parsed = JSON.parse(report.stdout.slice(report.stdout.indexOf('{\n'))) as {
      sales: Array<{ saleId: string; redisRemaining: number | null; buyersBelowRecord: number }>;
    };
    expect(parsed.sales.find((s) => s.saleId === sale.id)).toMatchObject({
      redisRemaining: null,
      buyersBelowRecord: 2,
    });
    expect(await redisState(env.redis)).toEqual(before);

    // --repair restores it from the record, buyers included.
    const repair = await reconcileCli('--repair');
    expect(repair.code, repair.output).toBe(0);
    expect(await env.redis.get(saleKeys(sale.id).stock)).toBe('3');
    expect(await env.service.buy({ saleId: sale.id, userId: 'r1', quantity: 1 })).toEqual({
      ok: false,
      code: 'limit_reached',
    });
    expect(await env.service.buy({ saleId: sale.id, userId: 'r3', quantity: 1 })).toMatchObject({ ok: true });
  });
});
