import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { availableParallelism, tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Command } from 'commander';
import { testHookWarnings } from './test-hooks.js';
import { KINDS, LIBRARIES } from '../bench/locks/libraries.js';
import { benchCurves, CURVE_STORES, type CurveStore } from '../bench/locks/curves.js';
import { curvesTable, writeCurvePlots } from '../bench/locks/curves-report.js';
import { benchLocks } from '../bench/locks/run.js';
import { SCENARIOS } from '../bench/locks/scenarios.js';
import { lockBenchTable } from '../bench/locks/table.js';
import { CLIENT_SETTINGS, TOPOLOGIES } from '../bench/locks/targets.js';
import type { MachineInfo } from '../bench/machine.js';
import { benchSale, saleBenchTable } from '../bench/sale/run.js';
import { benchRaffle, raffleBenchTable } from '../bench/sale/raffle.js';
import { benchShards, shardsBenchTable } from '../bench/sale/shards.js';
import { profileTable } from '../bench/sale/profile.js';
import { MAX_SHARDS } from '../sale/shards/layout.js';
import { renderTable, tableStyleFor, type TableData } from '../support/table.js';
import { action, type Resources } from './lifecycle.js';
import { InvalidArgumentError } from 'commander';
import { intOption, JSON_OPTION_HELP, jsonTarget, listOption } from './options.js';
import { createProgress } from './progress.js';

export function registerBench(program: Command): void {
  const bench = program.command('bench').description('benchmarks against peer libraries (not tests)');
  bench
    .command('locks')
    .description(
      "lockstock's lock kinds vs node-redlock, redis-semaphore, redlock-universal, the etcd3 lock and advisory-lock, each against its store's floor: uncontended pairs/s, " +
        'contended hand-offs and waits, read-write and semaphore under contention',
    )
    .option('--json [file]', JSON_OPTION_HELP)
    .option('--markdown', 'print the table as Markdown (the default when stdout is not a terminal)')
    .option('--redis <url>', 'use this Redis for the single-server rows instead of a private redis-server')
    .option('--runs <n>', 'runs per row (the report shows medians)', intOption(1, 100), 3)
    .option('--uncontended-ms <ms>', 'duration of one uncontended run', intOption(100), 3_000)
    .option('--contended-ms <ms>', 'duration of one contended run', intOption(100), 5_000)
    .option(
      '--scenarios <list>',
      `scenarios: ${SCENARIOS.join(', ')}; and curves (not by default): throughput and waits against waiters per lock, memory per hold and per waiter against held locks, on Redis and etcd`,
      listOption([...SCENARIOS, 'curves'] as const),
      [...SCENARIOS],
    )
    .option(
      '--plots <dir>',
      'curves: write the SVG plots into this directory (the repository keeps them in docs/img)',
    )
    .option('--curve-ms <ms>', 'curves: duration of each contention point', intOption(100), 2_000)
    .option(
      '--kinds <list>',
      `lockstock's kinds (each with the peers' counterparts): ${KINDS.join(', ')}`,
      listOption(KINDS),
      [...KINDS],
    )
    .option(
      '--clients <list>',
      `ioredis settings to compare: ${CLIENT_SETTINGS.join(', ')}`,
      listOption(CLIENT_SETTINGS),
      ['default'],
    )
    .option('--libraries <list>', `libraries: ${LIBRARIES.join(', ')}`, listOption(LIBRARIES), [...LIBRARIES])
    .option('--topologies <list>', `where: ${TOPOLOGIES.join(', ')}`, listOption(TOPOLOGIES), [...TOPOLOGIES])
    .option(
      '--base <checkout>',
      "instrumentation scenario: also measure another checkout's lockstock build (built), no subscriber, and give the ratios against it",
    )
    .option('--no-warmup', 'skip the warm-up round (cold figures: for smoke tests, not for comparing)')
    .action(
      action(async (resources, opts) => {
        // No logger here: the hooks that change a run (a Redlock vote timeout) are said on stderr.
        for (const warning of testHookWarnings()) process.stderr.write(`WARNING: ${warning}\n`);
        const json = jsonOutput(resources, opts.json);
        if (opts.scenarios.includes('curves')) {
          if (opts.scenarios.length > 1) throw new InvalidArgumentError('--scenarios curves runs alone');
          const stores = (opts.topologies as string[]).filter((t): t is CurveStore =>
            (CURVE_STORES as readonly string[]).includes(t),
          );
          if (stores.length === 0) throw new InvalidArgumentError(`curves run on ${CURVE_STORES.join(', ')}`);
          const report = await benchCurves({
            stores,
            durationMs: opts.curveMs,
            ...json.option,
            progress: progress(resources),
          });
          const plots = opts.plots ? writeCurvePlots(report, opts.plots) : [];
          json.report(() =>
            printReport(report.machine, curvesTable(report), opts.markdown === true, [
              `lockstock's mutex; each contention point ${opts.curveMs} ms; x: waiters (contention), locks held, or waiting callers`,
              ...plots.map((p) => `plot: ${p}`),
            ]),
          );
          return;
        }
        const scenarios = (opts.scenarios as string[]).filter(
          (s): s is (typeof SCENARIOS)[number] => s !== 'curves',
        );
        const { machine, warnings, results } = await benchLocks({
          redisUrl: opts.redis,
          runs: opts.runs,
          uncontendedMs: opts.uncontendedMs,
          contendedMs: opts.contendedMs,
          scenarios,
          kinds: opts.kinds,
          clients: opts.clients,
          libraries: opts.libraries,
          topologies: opts.topologies,
          base: opts.base,
          warmup: opts.warmup !== false,
          ...json.option,
          progress: progress(resources),
        });
        warn(warnings, json.toStdout);
        json.report(() =>
          printReport(machine, lockBenchTable(results), opts.markdown === true, [], warnings),
        );
      }),
    );
  bench
    .command('sale')
    .description(
      'reservations/s vs a bare script; HTTP purchases and sold-out answers/s (wrk) vs hello-world Fastify; pipeline orders/s',
    )
    .option('--json [file]', JSON_OPTION_HELP)
    .option('--markdown', 'print the table as Markdown (the default when stdout is not a terminal)')
    .option('--runs <n>', 'runs (the report shows medians)', intOption(1, 100), 3)
    .option('--duration <s>', 'duration of one measurement, seconds', intOption(1, 600), 3)
    .option('--orders <n>', 'orders the pipeline records per run', intOption(100, 10_000_000), 100_000)
    .option(
      '--shards <list>',
      "instead: one hot sale split into K parts on a K-master Cluster, per K (3: 1, 2 and 3; or a list, e.g. 1,2,4): reservations/s, Redis CPU per reservation and each master's share",
      shardList,
    )
    .option(
      '--processes <n>',
      'with --shards: load processes (default: cores − the largest K, at least 1)',
      intOption(1, 256),
    )
    .option('--loops <n>', 'with --shards: buying loops per load process', intOption(1, 10_000), 64)
    .option(
      '--raffle',
      "instead: a raffle sale's entries/s, entries recorded/s, and the draw's time for --draw-entries recorded entries",
    )
    .option(
      '--draw-entries <n>',
      'with --raffle: entries of the timed draw',
      intOption(1, 10_000_000),
      1_000_000,
    )
    .option(
      '--profile',
      'instead: CPU profiles of serve --workers 0 and the minimal endpoint under wrk, per request, side by side (--runs rounds)',
    )
    .option(
      '--before <cli>',
      "also measure another build's serve --workers 0 (its dist/cli/main.js): off, with rate limits, traced, in the same rounds",
    )
    .option(
      '--serve-processes <n>',
      'also measure serve with N HTTP processes on one port against one (1: not measured)',
      intOption(1, 256),
      availableParallelism(),
    )
    .action(
      action(async (resources, opts) => {
        const json = jsonOutput(resources, opts.json);
        if (opts.raffle) {
          const report = await benchRaffle({
            runs: opts.runs,
            drawEntries: opts.drawEntries,
            ...json.option,
            progress: progress(resources),
          });
          json.report(() =>
            printReport(report.machine, raffleBenchTable(report), opts.markdown === true, [
              `medians of ${opts.runs} run${opts.runs === 1 ? '' : 's'}; Redis and PostgreSQL started by the benchmark`,
            ]),
          );
          return;
        }
        if (opts.shards) {
          const report = await benchShards({
            shards: opts.shards,
            ...(opts.processes ? { processes: opts.processes } : {}),
            loops: opts.loops,
            durationSeconds: opts.duration,
            runs: opts.runs,
            ...json.option,
            progress: progress(resources),
          });
          const { processes, loops, durationSeconds } = report.load;
          json.report(() =>
            printReport(report.machine, shardsBenchTable(report), opts.markdown === true, [
              `load: ${processes} process${processes === 1 ? '' : 'es'} × ${loops} loops buying through the Reserver, ${durationSeconds} s per run, medians of ${opts.runs}`,
            ]),
          );
          return;
        }
        const { machine, warnings, results, profile } = await benchSale({
          runs: opts.runs,
          durationSeconds: opts.duration,
          pipelineOrders: opts.orders,
          serveProcesses: opts.serveProcesses,
          profile: opts.profile === true,
          ...(opts.before ? { before: String(opts.before) } : {}),
          ...json.option,
          progress: progress(resources),
        });
        warn(warnings, json.toStdout);
        json.report(() => {
          if (profile) {
            printReport(
              machine,
              profileTable(profile),
              opts.markdown === true,
              [
                `medians of ${profile.rounds} rounds; each server alone under wrk (64 connections, distinct buyers), its main thread sampled every 200 µs while wrk measured`,
              ],
              warnings,
            );
          } else printReport(machine, saleBenchTable(results), opts.markdown === true, [], warnings);
        });
      }),
    );
}

/**
 * `--json [file]` for the benchmarks, which write their JSON to a file: for stdout, to a temporary
 * one, printed instead of the table. `report` prints what is to be printed once the run is done.
 */
function jsonOutput(resources: Resources, value: string | boolean | undefined) {
  const target = jsonTarget(value);
  if (target !== 'stdout') {
    return {
      option: target ? { json: target.file } : {},
      toStdout: false,
      report: (table: () => void) => table(),
    };
  }
  const dir = mkdtempSync(join(tmpdir(), 'lockstock-bench-json-'));
  resources.add('the JSON report', () => rmSync(dir, { recursive: true, force: true }));
  const file = join(dir, 'report.json');
  return {
    option: { json: file },
    toStdout: true,
    report: () => void process.stdout.write(readFileSync(file, 'utf8')),
  };
}

/** Progress on stderr: a step per scenario × run (the bar goes away on Ctrl-C too). */
function progress(resources: Resources) {
  const reporter = createProgress({ unit: 'steps' });
  resources.add('progress bar', () => reporter.end());
  return reporter;
}

/** `--shards 1,2,4`: those parts; `--shards 3`: 1, 2 and 3 parts. Each from 1 to MAX_SHARDS. */
function shardList(value: string): number[] {
  const list = value.split(',').map((s) => Number(s.trim()));
  const [only] = list;
  if (
    list.length === 1 &&
    only !== undefined &&
    Number.isSafeInteger(only) &&
    only >= 1 &&
    only <= MAX_SHARDS
  )
    return Array.from({ length: only }, (_, i) => i + 1);
  if (list.length === 0 || list.some((k) => !Number.isSafeInteger(k) || k < 1 || k > MAX_SHARDS)) {
    throw new InvalidArgumentError(
      `expected a comma-separated list of parts from 1 to ${MAX_SHARDS}, got "${value}"`,
    );
  }
  return list;
}

/**
 * The benchmark's warnings (a busy machine, runs that disagree) on stderr when the JSON takes stdout;
 * otherwise they head the report.
 */
function warn(warnings: readonly string[], jsonOnStdout: boolean): void {
  if (jsonOnStdout) for (const w of warnings) process.stderr.write(`WARNING: ${w}\n`);
}

/** The report on stdout: what it ran on, any warnings, then the table. */
function printReport(
  machine: MachineInfo,
  table: TableData,
  markdown: boolean,
  notes: string[] = [],
  warnings: readonly string[] = [],
): void {
  const style = tableStyleFor(process.stdout, markdown);
  const lines = [
    `machine: ${machine.cpu}, ${machine.cores} cores, ${machine.memoryGiB} GiB, node ${machine.node}, redis ${machine.redis}`,
    ...warnings.map((w) => `WARNING: ${w}`),
    ...notes,
    '',
    ...renderTable(table, style, process.stdout.columns),
  ];
  process.stdout.write(`${lines.join('\n')}\n`);
}
