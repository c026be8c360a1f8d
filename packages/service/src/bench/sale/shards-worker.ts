/**
 * Child process of `bench sale --shards` (forked by shards.ts): `loops` async loops, each buying one
 * unit of the sale for a fresh buyer at a time through the Reserver (as `serve` does, without HTTP),
 * on its own Cluster connection, until its deadline. Reports what it bought and its latencies.
 */
import { Cluster } from 'ioredis';
import { saleContext } from '../../sale/context/context.js';
import { SnowflakeIdGenerator } from '../../sale/ids/snowflake.js';
import { Reserver } from '../../sale/reserve.js';

export interface ShardsWorkerConfig {
  nodes: Array<{ host: string; port: number }>;
  saleId: string;
  loops: number;
  durationMs: number;
  /** Unique per worker and run: buyers are `${buyerPrefix}${n}`. */
  buyerPrefix: string;
}

export interface ShardsWorkerReport {
  type: 'done';
  reserved: number;
  refused: number;
  errors: number;
  /** Latency of each reservation, µs, a sample (every 16th). */
  latenciesUs: number[];
}

async function main(config: ShardsWorkerConfig): Promise<void> {
  const redis = new Cluster(config.nodes);
  const context = saleContext(redis);
  const ids = new SnowflakeIdGenerator(context);
  await ids.start();
  const reserver = new Reserver(context, () => ids.next());
  let n = 0;
  const buyer = () => `${config.buyerPrefix}${n++}`;
  // Warm-up: every part's scripts loaded, the sale's layout learnt.
  for (let i = 0; i < 64; i++)
    await reserver.reserve({ saleId: config.saleId, userId: buyer(), quantity: 1 });
  process.send?.({ type: 'ready' });
  await new Promise((resolve) => process.once('message', resolve));

  const report: ShardsWorkerReport = { type: 'done', reserved: 0, refused: 0, errors: 0, latenciesUs: [] };
  const deadline = performance.now() + config.durationMs;
  await Promise.all(
    Array.from({ length: config.loops }, async () => {
      while (performance.now() < deadline) {
        const started = performance.now();
        try {
          const result = await reserver.reserve({ saleId: config.saleId, userId: buyer(), quantity: 1 });
          if (result.ok) report.reserved++;
          else report.refused++;
        } catch {
          report.errors++;
        }
        if ((report.reserved & 15) === 0) report.latenciesUs.push((performance.now() - started) * 1000);
      }
    }),
  );
  await ids.stop();
  redis.disconnect();
  process.send?.(report, () => process.exit(0));
}

function fail(error: unknown): void {
  console.error(error);
  process.exit(1);
}

process.once('message', (config: ShardsWorkerConfig) => void main(config).catch(fail));
process.once('disconnect', () => process.exit(1)); // the benchmark is gone: stop, do not linger
