import { writeFileSync } from 'node:fs';
import type { Command } from 'commander';
import type { RunResult } from '../lab/checker.js';
import { renderHtmlReport } from '../lab/html.js';
import { labMeta } from '../lab/meta.js';
import { formatTable, summarize, verdict } from '../lab/report.js';
import { runLab } from '../lab/runner.js';
import { fairnessTable, runFairnessLab } from '../lab/fairness/lab.js';
import type { FairnessRow } from '../lab/fairness/run.js';
import { STRATEGIES } from '../lab/strategies/index.js';
import { action } from './lifecycle.js';
import { intOption, JSON_OPTION_HELP, jsonTarget, knobOption, listOption } from './options.js';
import { createProgress } from './progress.js';
import { renderTable, tableStyleFor, type TableData } from '../support/table.js';

export function registerLab(program: Command): void {
  program
    .command('lab')
    .description(
      'the flash-sale designs common in blog posts and tutorials, broken ones included, as real flash sales across processes',
    )
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
      'a strategy knob, repeatable: sql-optimistic.retries=3 (-1: unbounded), redis-watch.retries=-1, redis-lua-segmented.segments=10, redis-lua-segmented.routing=round-robin, redis-lock-no-expiry.crashEvery=10, redis-lock-unowned-release.pauseEvery=5, redis-lock-paused.pauseEvery=5, redis-lock-fenced.pauseEvery=5',
      knobOption(STRATEGIES.map((s) => s.name)),
    )
    .option('--json [file]', JSON_OPTION_HELP)
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
    .option('--zookeeper <hosts>', 'ZooKeeper for zookeeper-lock (host:port,...); default: a private server')
    .option('--etcd <url>', 'etcd for etcd-lock (http://host:port); default: a private server')
    .option(
      '--mysql <url>',
      'MySQL/MariaDB for the mysql-* strategies (mysql://user@host:port/database); default: a private mariadbd',
    )
    .option(
      '--fairness',
      'add the fairness row: who gets the units when 10% of the buyers are bots sending 10× the requests, under first come, the waiting room and the raffle',
    )
    .option('--markdown', 'print the table as Markdown (the default when stdout is not a terminal)')
    .option('--list', 'list the strategies with a line on each, and exit')
    .action(
      action(async (resources, opts) => {
        const style = tableStyleFor(process.stdout, opts.markdown === true);
        if (opts.list) {
          printTable(renderTable(strategyTable(), style, process.stdout.columns));
          return;
        }
        const strategies: string[] = opts.strategies ?? STRATEGIES.map((s) => s.name);
        // Read before the run: the date it started and how busy the machine was then.
        const meta = labMeta({
          strategies,
          runs: opts.runs,
          stock: opts.stock,
          buyers: opts.buyers,
          processes: opts.processes,
          concurrency: opts.concurrency,
          strategyOptions: opts.set ?? {},
          // Which servers were given (never their URLs, which may hold passwords) or private.
          servers: Object.fromEntries(
            (['redis', 'database', 'zookeeper', 'etcd', 'mysql'] as const).map((name) => [
              name,
              opts[name] ? 'given' : 'private',
            ]),
          ),
        });
        const progress = createProgress({ unit: 'runs' });
        resources.add('progress bar', () => progress.end());
        progress.begin(
          strategies.flatMap((strategy) =>
            Array.from({ length: opts.runs }, (_, i) => ({
              label: `${strategy} run ${i + 1}/${opts.runs}`,
              weight: 1,
            })),
          ),
        );
        const doneByProcess: number[] = [];
        const runsSoFar: RunResult[] = [];
        let results: RunResult[];
        try {
          results = await runLab({
            strategies,
            stock: opts.stock,
            buyers: opts.buyers,
            processes: opts.processes,
            concurrency: opts.concurrency,
            runs: opts.runs,
            ...(opts.set ? { strategyOptions: opts.set } : {}),
            ...(opts.redis ? { redisUrl: opts.redis } : {}),
            ...(opts.database ? { databaseUrl: opts.database } : {}),
            servers: {
              ...(opts.zookeeper ? { zookeeper: opts.zookeeper } : {}),
              ...(opts.etcd ? { etcd: opts.etcd } : {}),
              ...(opts.mysql ? { mysql: opts.mysql } : {}),
            },
            onRunStart: () => {
              doneByProcess.fill(0);
              progress.start();
            },
            onProgress: (index, done) => {
              doneByProcess[index] = done;
              progress.advance(doneByProcess.reduce((a, b) => a + b, 0) / opts.buyers);
            },
            onRunDone: (result) => {
              runsSoFar.push(result);
              // After a strategy's last run, what its runs showed (the table comes at the end).
              if (result.run < opts.runs) return progress.finish();
              const [summary] = summarize(runsSoFar.filter((r) => r.strategy === result.strategy));
              progress.finish(
                summary &&
                  `${summary.strategy}: ${verdict(summary)}${summary.asExpected ? '' : ' (NOT as expected)'}`,
              );
            },
          });
        } finally {
          progress.end();
        }
        const summaries = summarize(results);
        const json = jsonTarget(opts.json);
        if (json !== 'stdout') printTable(formatTable(summaries, style, process.stdout.columns));
        const settings = {
          stock: opts.stock,
          buyers: opts.buyers,
          processes: opts.processes,
          concurrency: opts.concurrency,
          strategyOptions: opts.set ?? {},
        };
        let fairness: FairnessRow[] | undefined;
        if (opts.fairness) {
          fairness = await runFairnessLab({
            ...(opts.redis ? { redisUrl: opts.redis } : {}),
            ...(opts.database ? { databaseUrl: opts.database } : {}),
          });
          if (json !== 'stdout')
            printTable(renderTable(fairnessTable(fairness), style, process.stdout.columns));
        }
        const report = `${JSON.stringify({ meta, settings, runs: results, strategies: summaries, ...(fairness ? { fairness } : {}) }, null, 2)}\n`;
        if (json === 'stdout') process.stdout.write(report);
        else if (json) writeFileSync(json.file, report);
        if (opts.html)
          writeFileSync(opts.html, renderHtmlReport(summaries, results, settings, meta, fairness));
      }),
    );
}

/** `lab --list`: every strategy, what it is expected to do, and its one-line description. */
function strategyTable(): TableData {
  return {
    columns: [
      { header: 'strategy' },
      { header: 'expected', wrap: true },
      { header: 'what it is', wrap: true },
    ],
    rows: STRATEGIES.map((s) => [s.name, s.expectation.replaceAll('_', ' '), s.title]),
  };
}

function printTable(lines: string[]): void {
  process.stdout.write(`${lines.join('\n')}\n`);
}
