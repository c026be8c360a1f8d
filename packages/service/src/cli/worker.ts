import { Option, type Command } from 'commander';
import { intOption } from './options.js';
import { action } from './lifecycle.js';
import { startRuntime } from './runtime.js';
import type { OrderPipelineOptions } from '../sale/pipeline/order-pipeline.js';
import { LOG_ENV_HELP } from './log-format.js';
import { startMetricsListener } from './metrics-listener.js';

/**
 * Fault injection for the crash tests (inert unless LOCKSTOCK_FAULT is set): at the named point of the
 * first batch the worker prints `fault:<point>` and stops there, so the test can SIGKILL it mid-batch.
 */
function faultsFromEnv(): OrderPipelineOptions['faults'] {
  const point = process.env.LOCKSTOCK_FAULT;
  if (point !== 'before-commit' && point !== 'after-commit') return undefined;
  const stall = async () => {
    process.stdout.write(`fault:${point}\n`);
    await new Promise(() => undefined);
  };
  return point === 'before-commit' ? { beforeCommit: stall } : { afterCommit: stall };
}

export function registerWorker(program: Command): void {
  program
    .command('worker')
    .description('the order pipeline alone (run as many as you like next to `serve --workers 0`)')
    .option('--redis <url>', 'Redis (REDIS_URL)', process.env.REDIS_URL)
    .option('--database <url>', 'PostgreSQL (DATABASE_URL)', process.env.DATABASE_URL)
    .option('--workers <n>', 'pipeline workers in this process', intOption(1, 64), 1)
    .option('--batch-size <n>', 'entries per database transaction', intOption(1, 10_000), 1000)
    .option(
      '--claim-idle-ms <ms>',
      'take over entries another consumer left pending this long',
      intOption(100),
      10_000,
    )
    .addOption(
      new Option(
        '--metrics-port <port>',
        'serve GET /metrics and /healthz on this port (0: any free port; unset: no listener)',
      )
        .argParser(intOption(0, 65_535))
        .env('LOCKSTOCK_METRICS_PORT'),
    )
    .addOption(
      new Option('--metrics-host <host>', 'address of the metrics listener')
        .default('127.0.0.1')
        .env('LOCKSTOCK_METRICS_HOST'),
    )
    .addHelpText('after', LOG_ENV_HELP)
    .action(
      action(
        async (
          resources,
          options: {
            redis?: string;
            database?: string;
            workers: number;
            batchSize: number;
            claimIdleMs: number;
            metricsPort?: number;
            metricsHost: string;
          },
        ) => {
          if (!options.redis || !options.database) {
            throw new Error(
              'worker needs a shared Redis and PostgreSQL: set REDIS_URL and DATABASE_URL (or --redis/--database); ' +
                'the embedded stores of `serve` belong to that one process',
            );
          }
          const runtime = await startRuntime(
            {
              redisUrl: options.redis,
              databaseUrl: options.database,
              role: 'worker',
              pipelines: options.workers,
              pipeline: {
                batchSize: options.batchSize,
                claimIdleMs: options.claimIdleMs,
                faults: faultsFromEnv(),
              },
            },
            resources,
          );
          const metrics =
            options.metricsPort === undefined
              ? undefined
              : await startMetricsListener({
                  port: options.metricsPort,
                  host: options.metricsHost,
                  registry: runtime.metrics.registry,
                  pipelines: () => runtime.pipelineHealth(),
                });
          if (metrics) {
            resources.add(
              'the metrics listener',
              () =>
                new Promise<void>((resolve) => {
                  metrics.close(() => resolve());
                  metrics.closeAllConnections(); // a scraper's keep-alive socket would hold close()
                }),
            );
          }
          runtime.logger.info(
            {
              consumers: runtime.pipelines.map((p) => p.consumer),
              ...(metrics ? { metrics: `${metrics.url}/metrics` } : {}),
            },
            'order pipeline running',
          );
          return 'serving';
        },
      ),
    );
}
