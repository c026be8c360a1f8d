import { Redis } from 'ioredis';
import { Registry } from 'prom-client';
import { afterEach, describe, expect, it } from 'vitest';
import { RedisServer } from '@lockstock/servers';
import { saleContext } from '../../src/sale/context/context.js';
import { readSaleGauges, registerSaleGauges } from '../../src/sale/gauges.js';
import { layoutKey, partKeys } from '../../src/sale/shards/layout.js';
import { useSaleStack } from '../helpers/sale.js';
import { until } from '../helpers/until.js';

const env = useSaleStack();

type Gauges = ReturnType<typeof registerSaleGauges>;
const registered: Gauges[] = [];
afterEach(async () => {
  await Promise.all(registered.splice(0).map((g) => g.stop()));
});

/** Registers the gauges; the readings are stopped after the test. */
function register(registry: Registry, deps: Parameters<typeof registerSaleGauges>[1]): Gauges {
  const gauges = registerSaleGauges(registry, deps);
  registered.push(gauges);
  return gauges;
}

/** The registry's text after a reading begun now (the gauges read in the background). */
async function scrape(registry: Registry, gauges: Gauges): Promise<string> {
  await gauges.fresh();
  return registry.metrics();
}

/**
 * The value of `name{sale="<saleId>"}` in a registry's text after a fresh reading, undefined when
 * there is no such series.
 */
async function gauge(
  registry: Registry,
  name: string,
  saleId: string,
  gauges = registered.at(-1)!,
): Promise<number | undefined> {
  const text = await scrape(registry, gauges);
  const line = text.split('\n').find((l) => l.startsWith(`${name}{sale="${saleId}"} `));
  return line === undefined ? undefined : Number(line.split(' ')[1]);
}

describe('per-sale gauges on /metrics', () => {
  it('show units left, reserved and recorded, and the backlog until the pipeline records it', async () => {
    const registry = new Registry();
    register(registry, { context: env.context, db: env.db });
    const sale = await env.service.createSale({ name: 'gauges', stock: 10, perUserLimit: 5 });
    for (const userId of ['a', 'b']) {
      expect((await env.service.buy({ saleId: sale.id, userId, quantity: userId === 'a' ? 2 : 1 })).ok).toBe(
        true,
      );
    }
    // No pipeline yet: three units reserved, none recorded, two entries wait.
    expect(await gauge(registry, 'lockstock_sale_units_left', sale.id)).toBe(7);
    expect(await gauge(registry, 'lockstock_sale_units_reserved', sale.id)).toBe(3);
    expect(await gauge(registry, 'lockstock_sale_units_recorded', sale.id)).toBe(0);
    expect(await gauge(registry, 'lockstock_sale_unrecorded_entries', sale.id)).toBe(2);
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(await gauge(registry, 'lockstock_sale_oldest_unrecorded_seconds', sale.id)).toBeGreaterThan(0.2);
    expect(await gauge(registry, 'lockstock_sale_transfers_in_flight', sale.id)).toBe(0);
    expect(await gauge(registry, 'lockstock_sale_dead_letters', sale.id)).toBe(0);
    const text = await scrape(registry, registered.at(-1)!);
    expect(text).toMatch(/^lockstock_sale_metrics_up 1$/m);
    expect(text).toMatch(/^lockstock_dependency_up\{dependency="redis"\} 1$/m);
    expect(text).toMatch(/^lockstock_dependency_up\{dependency="database"\} 1$/m);

    env.pipeline({ blockMs: 50 }).start();
    await until(
      'the pipeline recorded the sale',
      async () => (await gauge(registry, 'lockstock_sale_units_recorded', sale.id)) === 3,
    );
    await until(
      'the backlog is empty',
      async () => (await gauge(registry, 'lockstock_sale_unrecorded_entries', sale.id)) === 0,
    );
    expect(await gauge(registry, 'lockstock_sale_oldest_unrecorded_seconds', sale.id)).toBe(0);
  });

  it("drop a sale's series once it has ended with nothing left to record", async () => {
    const registry = new Registry();
    register(registry, { context: env.context, db: env.db });
    const sale = await env.service.createSale({
      name: 'ends',
      stock: 5,
      endsAt: new Date(Date.now() + 1500),
    });
    expect(await gauge(registry, 'lockstock_sale_units_left', sale.id)).toBe(5);
    await until(
      'the ended sale has no series',
      async () => (await gauge(registry, 'lockstock_sale_units_left', sale.id)) === undefined,
      10_000,
    );
    expect(await scrape(registry, registered.at(-1)!)).not.toContain(`sale="${sale.id}"`);
  });

  it("sum a split sale's parts, with the units its transfers carry", async () => {
    // A split layout written by hand on the one Redis: two parts, one transfer of 2 units in flight.
    const saleId = '987654321';
    const tags = [`sale:${saleId}:p0.1`, `sale:${saleId}:p1.1`];
    const [p0, p1] = tags.map((tag, part) => partKeys(tag, part));
    await env.redis.set(layoutKey(saleId), tags.join(','));
    await env.redis.sadd('ls:sales:active', saleId);
    await env.redis.set(p0!.stock, 3);
    await env.redis.set(p1!.stock, 4);
    await env.redis.set(p0!.open, 1, 'EX', 60);
    await env.redis.set(p0!.inflight, 2);
    await env.redis.hset(p0!.transfers, 't1', '1:2:0');
    const reading = await readSaleGauges({ context: env.context, db: env.db });
    expect(reading.sales.find((s) => s.sale === saleId)).toMatchObject({
      left: 7,
      open: true,
      unitsInFlight: 2,
      transfersInFlight: 1,
    });
    await env.redis.srem('ls:sales:active', saleId);
  });

  it('answer without Redis within the bound, with lockstock_sale_metrics_up 0 and no per-sale series', async () => {
    const server = await RedisServer.start();
    const redis = new Redis(server.url);
    redis.on('error', () => undefined); // refused connections once the server is stopped
    try {
      const registry = new Registry();
      const gauges = register(registry, { context: saleContext(redis), db: env.db, timeoutMs: 500 });
      expect(await scrape(registry, gauges)).toMatch(/^lockstock_sale_metrics_up 1$/m);
      await server.stop();
      const started = Date.now();
      const text = await scrape(registry, gauges);
      expect(Date.now() - started).toBeLessThan(2_000);

      expect(text).toMatch(/^lockstock_sale_metrics_up 0$/m);
      expect(text).toMatch(/^lockstock_dependency_up\{dependency="redis"\} 0$/m);
      expect(text).toMatch(/^lockstock_dependency_up\{dependency="database"\} 1$/m);
      expect(text).not.toMatch(/^lockstock_sale_units_left\{/m);
    } finally {
      redis.disconnect();
      await server.stop();
    }
  });

  it('answer a scrape from memory while Redis hangs: the scrape is back before the hung reading', async () => {
    const server = await RedisServer.start();
    const redis = new Redis(server.url);
    redis.on('error', () => undefined);
    try {
      const registry = new Registry();
      const gauges = register(registry, { context: saleContext(redis), db: env.db, timeoutMs: 1_000 });
      expect(await scrape(registry, gauges)).toMatch(/^lockstock_dependency_up\{dependency="redis"\} 1$/m);
      server.signal('SIGSTOP');
      let readingDone = false;
      const reading = gauges.fresh().then(() => (readingDone = true));
      // A reading against the frozen server waits for its 1 s bound; the scrape does not wait for it.
      const text = await registry.metrics();
      expect(readingDone).toBe(false);
      expect(text).toMatch(/^lockstock_sale_metrics_age_seconds \d/m);
      await reading;
      expect(await registry.metrics()).toMatch(/^lockstock_dependency_up\{dependency="redis"\} 0$/m);
    } finally {
      server.signal('SIGCONT');
      redis.disconnect();
      await server.stop();
    }
  });
});
