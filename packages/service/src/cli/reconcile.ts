import type { Command } from 'commander';
import { reconcile } from '../sale/reconcile.js';
import { action } from './lifecycle.js';
import { startRuntime } from './runtime.js';

export function registerReconcile(program: Command): void {
  program
    .command('reconcile')
    .description('compare Redis with the order record per open sale; --repair fixes Redis to match')
    .option('--repair', 'set Redis stock and buyer counts to what the record allows', false)
    .option('--redis <url>', 'Redis (REDIS_URL); default: the embedded one', process.env.REDIS_URL)
    .option(
      '--database <url>',
      'PostgreSQL (DATABASE_URL); default: the embedded one',
      process.env.DATABASE_URL,
    )
    .option('--data-dir <dir>', 'where embedded data lives', '.lockstock')
    .option('--json', 'print JSON', false)
    .action(
      action(
        async (
          resources,
          options: {
            repair: boolean;
            redis?: string;
            database?: string;
            dataDir: string;
            json: boolean;
          },
        ) => {
          const runtime = await startRuntime(
            {
              ...(options.redis ? { redisUrl: options.redis } : {}),
              ...(options.database ? { databaseUrl: options.database } : {}),
              dataDir: options.dataDir,
              pipelines: 0,
              sells: false, // a report changes nothing; --repair rebuilds under the recovery lock
            },
            resources,
          );
          const report = await reconcile(runtime, { repair: options.repair });
          if (options.json) {
            process.stdout.write(`${JSON.stringify({ sales: report }, null, 2)}\n`);
          } else {
            for (const s of report) {
              const state =
                s.condition !== 'ok'
                  ? `REDIS ${s.condition.toUpperCase()}`
                  : s.drift === 0 && s.buyersBelowRecord === 0 && s.unscheduledOrders === 0
                    ? 'in sync'
                    : 'DRIFT';
              const repaired =
                s.repairedRemaining === undefined ? '' : ` -> repaired: remaining ${s.repairedRemaining}`;
              process.stdout.write(
                `sale ${s.saleId}: stock ${s.stock}, Redis remaining ${s.redisRemaining ?? 'missing'}, recorded ${s.recordedUnits}, ` +
                  `in flight ${s.inFlightUnits}, drift ${s.drift}, buyers below record ${s.buyersBelowRecord}, ` +
                  `unscheduled unpaid orders ${s.unscheduledOrders} [${state}]${repaired}\n`,
              );
            }
          }
          if (
            !options.repair &&
            report.some(
              (s) =>
                s.condition !== 'ok' || s.drift !== 0 || s.buyersBelowRecord > 0 || s.unscheduledOrders > 0,
            )
          )
            process.exitCode = 2;
        },
      ),
    );
}
