import type { Command } from 'commander';
import { intOption } from './options.js';
import { startRuntime } from './runtime.js';
import { onShutdown } from './serve.js';

export function registerWorker(program: Command): void {
  program
    .command('worker')
    .description('the order pipeline alone (run as many as you like next to `serve --workers 0`)')
    .option('--redis <url>', 'Redis (REDIS_URL)', process.env.REDIS_URL)
    .option('--database <url>', 'PostgreSQL (DATABASE_URL)', process.env.DATABASE_URL)
    .option('--workers <n>', 'pipeline workers in this process', intOption(1, 64), 1)
    .action(async (options: { redis?: string; database?: string; workers: number }) => {
      if (!options.redis || !options.database) {
        throw new Error(
          'worker needs a shared Redis and PostgreSQL: set REDIS_URL and DATABASE_URL (or --redis/--database); ' +
            'the embedded stores of `serve` belong to that one process',
        );
      }
      const runtime = await startRuntime({
        redisUrl: options.redis,
        databaseUrl: options.database,
        pipelines: options.workers,
      });
      runtime.logger.info({ consumers: runtime.pipelines.map((p) => p.consumer) }, 'order pipeline running');
      onShutdown(() => runtime.close());
    });
}
