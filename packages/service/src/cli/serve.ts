import { availableParallelism } from 'node:os';
import { Option, type Command } from 'commander';
import { intOption } from './options.js';
import { action } from './lifecycle.js';
import { jwtSecret } from './jwt-secret.js';
import { startRuntime } from './runtime.js';
import {
  announce,
  assertCanListen,
  claimDataDir,
  gaugeReadingsToLog,
  listen,
  runtimeOptions,
  type ServeOptions,
} from './serve-common.js';
import { isHttpProcess, serveHttpProcess } from './serve-http-process.js';
import { servePrimary } from './serve-primary.js';
import { registerSaleGauges } from '../sale/gauges.js';
import { SERVICE_INSTANCE_ID } from './tracing.js';
import { LOG_ENV_HELP } from './log-format.js';

export function registerServe(program: Command): void {
  program
    .command('serve')
    .description('the flash-sale HTTP service (with the order pipeline); embedded Redis + PGlite by default')
    .option(
      '--port <port>',
      'port to listen on (PORT)',
      intOption(0, 65_535),
      Number(process.env.PORT ?? 3000),
    )
    .option('--host <host>', 'address to listen on', '127.0.0.1')
    .option(
      '--redis <url>',
      'Redis to use (REDIS_URL); default: a private redis-server',
      process.env.REDIS_URL,
    )
    .option(
      '--database <url>',
      'PostgreSQL to use (DATABASE_URL); default: embedded PGlite',
      process.env.DATABASE_URL,
    )
    .option(
      '--workers <n>',
      'order pipeline workers (in the process that records orders)',
      intOption(0, 64),
      1,
    )
    .option('--data-dir <dir>', 'where embedded data lives', '.lockstock')
    .addOption(
      new Option(
        '--durability <mode>',
        'what a 202 means: fsync (on disk first; the embedded redis-server runs appendfsync always, the embedded record syncs its commits) or memory (a machine crash can lose the last second)',
      )
        .choices(['fsync', 'memory'])
        .default('fsync')
        .env('LOCKSTOCK_DURABILITY'),
    )
    .addOption(
      new Option(
        '--processes <n>',
        'processes answering HTTP on the one port; with more than 1, a primary process owns the data and records the orders, and the others answer buyers (default: the cores available)',
      )
        .argParser(intOption(1, 256))
        .default(availableParallelism())
        .env('LOCKSTOCK_PROCESSES'),
    )
    .addHelpText('after', LOG_ENV_HELP)
    .action(
      action(async (resources, options: ServeOptions) => {
        if (isHttpProcess()) return serveHttpProcess(resources, options);
        if (options.processes > 1) return servePrimary(resources, options);
        // The embedded servers' data has one owner: a second serve stops here, touching nothing.
        const claim = claimDataDir(options);
        if (claim) resources.add('the data directory', () => claim.release());
        await assertCanListen(options);
        const runtime = await startRuntime(runtimeOptions(options, { httpServer: true }), resources);
        // The per-sale gauges of /metrics, read in the background.
        const gauges = registerSaleGauges(runtime.metrics.registry, {
          context: runtime.context,
          db: runtime.db,
          layouts: runtime.service.layouts,
          // One serve of those sharing the Redis exposes the per-sale series (the lease holder).
          readerId: SERVICE_INSTANCE_ID,
          onReading: gaugeReadingsToLog(runtime),
        });
        resources.add('the sale gauges', () => gauges.stop());
        const secret = jwtSecret(options.dataDir);
        const embedded = runtime.embedded.redis && runtime.embedded.database;
        const address = await listen(resources, runtime, options, {
          secret,
          demoBuyers: embedded,
          pipelines: () => runtime.pipelineHealth(),
        });
        claim?.update({ redisUrl: runtime.redisUrl, httpUrl: address });
        await announce(runtime, address, secret);
        return 'serving';
      }),
    );
}
