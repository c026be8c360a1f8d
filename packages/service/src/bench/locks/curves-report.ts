import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { TableData } from '../../support/table.js';
import { linePlot, type Series } from '../svg.js';
import { STORE_NAMES, type ContentionPoint, type CurvesReport, type MemoryPoint } from './curves.js';

const n = (x: number) => x.toLocaleString('en-US');
const bytes = (x: number) => n(Math.round(x));
const ms = (x: number | null) => (x === null || !Number.isFinite(x) ? '' : String(Math.round(x * 100) / 100));

/** The curves as one table: the contention points, then the memory points. */
export function curvesTable(report: CurvesReport): TableData {
  const right = 'right' as const;
  return {
    columns: [
      { header: 'curve' },
      { header: 'store' },
      { header: 'x', align: right },
      { header: 'sections/s', align: right },
      { header: 'hand-off p99 ms', align: right },
      { header: 'max wait ms', align: right },
      { header: 'client B/each', align: right },
      { header: 'store B/each', align: right },
      { header: 'violations / took ms', align: right },
    ],
    rows: [
      ...report.contention.map((p) => [
        'waiters per lock',
        STORE_NAMES[p.store],
        n(p.waiters),
        n(Math.round(p.opsPerSec)),
        ms(p.handoffP99Ms),
        n(Math.round(p.maxWaitMs)),
        '',
        '',
        String(p.violations),
      ]),
      ...report.memory.map((p) => [
        p.what === 'hold' ? 'held locks' : 'waiters on one held lock',
        STORE_NAMES[p.store],
        n(p.n),
        '',
        '',
        '',
        bytes(p.clientBytes),
        p.storeHeapBytes === undefined
          ? bytes(p.storeBytes)
          : `${bytes(p.storeBytes)} (heap ${bytes(p.storeHeapBytes)})`,
        n(Math.round(p.ms)),
      ]),
    ],
  };
}

function contentionSeries(
  points: readonly ContentionPoint[],
  y: (p: ContentionPoint) => number | null,
): Series[] {
  const stores = [...new Set(points.map((p) => p.store))];
  return stores.map((store) => ({
    label: STORE_NAMES[store],
    points: points.filter((p) => p.store === store).map((p) => [p.waiters, y(p)] as const),
  }));
}

function memorySeries(points: readonly MemoryPoint[], what: MemoryPoint['what']): Series[] {
  const of = points.filter((p) => p.what === what);
  const stores = [...new Set(of.map((p) => p.store))];
  return stores.flatMap((store) => [
    {
      label: `${STORE_NAMES[store]}: client heap`,
      points: of.filter((p) => p.store === store).map((p) => [p.n, p.clientBytes] as const),
    },
    {
      label: `${STORE_NAMES[store]}: ${store === 'etcd' ? 'db in use' : 'used_memory'}`,
      points: of.filter((p) => p.store === store).map((p) => [p.n, p.storeBytes] as const),
    },
  ]);
}

/**
 * Writes the curves' SVG plots into `dir` (docs/img in the repository): throughput, hand-off p99 and
 * the longest wait against waiters per lock; bytes per hold against held locks; bytes per waiter
 * against waiters. Returns the files written.
 */
export function writeCurvePlots(report: CurvesReport, dir: string): string[] {
  mkdirSync(dir, { recursive: true });
  const plots: Array<[string, string]> = [
    [
      'curves-throughput.svg',
      linePlot({
        title: 'lockstock mutex: sections/s (1 ms each) against waiters per lock',
        xLabel: 'callers contending for one lock',
        yLabel: 'sections/s',
        series: contentionSeries(report.contention, (p) => p.opsPerSec),
      }),
    ],
    [
      'curves-handoff-p99.svg',
      linePlot({
        title: 'lockstock mutex: hand-off to another caller, p99',
        xLabel: 'callers contending for one lock',
        yLabel: 'ms (log)',
        logY: true,
        series: contentionSeries(report.contention, (p) => p.handoffP99Ms),
      }),
    ],
    [
      'curves-max-wait.svg',
      linePlot({
        title: `lockstock mutex: longest wait in a ${report.durationMs / 1000} s run`,
        xLabel: 'callers contending for one lock',
        yLabel: 'ms (log)',
        logY: true,
        series: contentionSeries(report.contention, (p) => p.maxWaitMs),
      }),
    ],
    [
      'curves-memory-hold.svg',
      linePlot({
        title: 'memory per held lock (client heap, store)',
        xLabel: 'locks held by one client',
        yLabel: 'bytes per hold (log)',
        logY: true,
        series: memorySeries(report.memory, 'hold'),
      }),
    ],
    [
      'curves-memory-waiter.svg',
      linePlot({
        title: 'memory per waiting caller on one held lock (client heap, store)',
        xLabel: 'callers waiting',
        yLabel: 'bytes per waiter (log)',
        logY: true,
        series: memorySeries(report.memory, 'waiter'),
      }),
    ],
  ];
  return plots.map(([file, svg]) => {
    const path = join(dir, file);
    writeFileSync(path, svg);
    return path;
  });
}
