import type { Command } from 'commander';
import { benchLocks, LIBRARIES } from '../bench/locks/run.js';
import { benchSale } from '../bench/sale/run.js';
import { action } from './lifecycle.js';
import { intOption, listOption } from './options.js';

export function registerBench(program: Command): void {
  const bench = program.command('bench').description('benchmarks against peer libraries (not tests)');
  bench
    .command('locks')
    .description('lockstock vs node-redlock vs redis-semaphore: uncontended pairs/s and contended hand-offs')
    .option('--json <file>', 'write the results as JSON')
    .option('--redis <url>', 'use this Redis instead of a private redis-server')
    .option('--runs <n>', 'runs per library (the report shows medians)', intOption(1, 100), 3)
    .option('--uncontended-ms <ms>', 'duration of one uncontended run', intOption(100), 3_000)
    .option('--contended-ms <ms>', 'duration of one contended run', intOption(100), 5_000)
    .option(
      '--clients <list>',
      'ioredis settings to compare: default, autoPipelining',
      listOption(['default', 'autoPipelining'] as const),
      ['default'],
    )
    .option('--libraries <list>', `libraries: ${LIBRARIES.join(', ')}`, listOption(LIBRARIES), [...LIBRARIES])
    .action(
      action(async (_resources, opts) => {
        await benchLocks({
          redisUrl: opts.redis,
          runs: opts.runs,
          uncontendedMs: opts.uncontendedMs,
          contendedMs: opts.contendedMs,
          clients: opts.clients,
          libraries: opts.libraries,
          json: opts.json,
        });
      }),
    );
  bench
    .command('sale')
    .description(
      'reservations/s vs a bare script, HTTP purchases/s vs hello-world Fastify, pipeline orders/s',
    )
    .option('--json <file>', 'write the results as JSON')
    .option('--runs <n>', 'runs (the report shows medians)', intOption(1, 100), 3)
    .option('--duration-ms <ms>', 'duration of one measurement', intOption(100), 3_000)
    .action(
      action(async (_resources, opts) => {
        await benchSale({ runs: opts.runs, durationMs: opts.durationMs, json: opts.json });
      }),
    );
}
