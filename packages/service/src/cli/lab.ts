import { writeFileSync } from 'node:fs';
import type { Command } from 'commander';
import cliProgress from 'cli-progress';
import { renderHtmlReport } from '../lab/html.js';
import { formatTable, summarize } from '../lab/report.js';
import { runLab } from '../lab/runner.js';
import { STRATEGIES } from '../lab/strategies/index.js';
import { action } from './lifecycle.js';
import { intOption, knobOption, listOption } from './options.js';

export function registerLab(program: Command): void {
  program
    .command('lab')
    .description('every approach from the seeds, broken ones included, as real flash sales across processes')
    .option(
      '--strategies <list>',
      'strategies to run (default: all)',
      listOption(STRATEGIES.map((s) => s.name)),
    )
    .option('--stock <n>', 'units on sale', intOption(1, 1_000_000), 50)
    .option('--buyers <n>', 'buyers per run (each tries once)', intOption(1, 1_000_000), 150)
    .option('--processes <n>', 'worker processes', intOption(1, 64), 4)
    .option('--concurrency <n>', 'concurrent buyers per process', intOption(1, 1_000), 8)
    .option('--runs <n>', 'runs per strategy', intOption(1, 1_000), 2)
    .option(
      '--set <name.knob=value>',
      'a strategy knob, repeatable: sql-optimistic.retries=3 (-1: unbounded), redis-lua-segmented.segments=10, redis-lua-segmented.routing=round-robin, redis-lock-unowned-release.pauseEvery=5',
      knobOption(STRATEGIES.map((s) => s.name)),
    )
    .option('--json <file>', 'write the runs as JSON')
    .option('--html <file>', 'write a self-contained HTML report')
    .option(
      '--redis <url>',
      'Redis to use (REDIS_URL); default: a private redis-server',
      process.env.REDIS_URL,
    )
    .option(
      '--database <url>',
      'PostgreSQL (DATABASE_URL); default: a private server',
      process.env.DATABASE_URL,
    )
    .action(
      action(async (_resources, opts) => {
        const strategies: string[] = opts.strategies ?? STRATEGIES.map((s) => s.name);
        const interactive = process.stderr.isTTY;
        const bars = interactive
          ? new cliProgress.MultiBar(
              { format: ' {label} |{bar}| {value}/{total}', hideCursor: true, clearOnComplete: true },
              cliProgress.Presets.shades_grey,
            )
          : undefined;
        const perProcess = Math.ceil(opts.buyers / opts.processes);
        let processBars: cliProgress.SingleBar[] = [];
        const results = await runLab({
          strategies,
          stock: opts.stock,
          buyers: opts.buyers,
          processes: opts.processes,
          concurrency: opts.concurrency,
          runs: opts.runs,
          ...(opts.set ? { strategyOptions: opts.set } : {}),
          ...(opts.redis ? { redisUrl: opts.redis } : {}),
          ...(opts.database ? { databaseUrl: opts.database } : {}),
          onRunStart: (strategy, run) => {
            if (!bars) return process.stderr.write(`${strategy} run ${run}/${opts.runs}\n`);
            for (const bar of processBars) bars.remove(bar);
            processBars = Array.from({ length: opts.processes }, (_, i) =>
              bars.create(perProcess, 0, { label: `${strategy} #${run} process ${i + 1}`.padEnd(44) }),
            );
          },
          onProgress: (index, done) => processBars[index]?.update(done),
        });
        bars?.stop();
        const summaries = summarize(results);
        process.stdout.write(`${formatTable(summaries).join('\n')}\n`);
        const settings = {
          stock: opts.stock,
          buyers: opts.buyers,
          processes: opts.processes,
          concurrency: opts.concurrency,
          strategyOptions: opts.set ?? {},
        };
        if (opts.json) {
          writeFileSync(
            opts.json,
            `${JSON.stringify({ settings, runs: results, strategies: summaries }, null, 2)}\n`,
          );
        }
        if (opts.html) writeFileSync(opts.html, renderHtmlReport(summaries, results, settings));
      }),
    );
}
