import type { TableData } from '../../support/table.js';
import { INSTRUMENTATION_LABEL } from './instrumentation.js';
import type { LockBenchResult } from './run.js';

const cell = (value: number | null) => (value === null ? '' : String(value));

/**
 * The report table: a row per scenario, kind, topology, client and library, in plan order (lockstock's
 * kind first, then the peers it is compared with); lockstock rows carry their ratio to the best peer.
 * The instrumentation scenario's rows name their variant in the library cell, and carry their ratios
 * to the un-instrumented row: pairs/s, and the client's CPU per pair.
 */
export function lockBenchTable(results: readonly LockBenchResult[]): TableData {
  const right = 'right' as const;
  return {
    columns: [
      { header: 'scenario' },
      { header: 'kind' },
      { header: 'topology' },
      { header: 'client' },
      { header: 'library' },
      { header: 'ops/s', align: right },
      { header: '× best peer', align: right },
      { header: '× floor', align: right },
      { header: '× uninstrumented pairs/s / CPU', align: right },
      { header: 'CPU µs/pair client / Redis', align: right },
      { header: 'handoff→other p50 / p99 ms', align: right },
      { header: 'max wait ms', align: right },
      { header: 'writer max wait ms', align: right },
      { header: 'violations', align: right },
    ],
    rows: results.map((r) => [
      r.scenario,
      r.kind,
      r.topology,
      r.client,
      r.instrumentation === null ? r.library : INSTRUMENTATION_LABEL[r.instrumentation],
      String(r.opsPerSec),
      r.timesBestPeer === null ? '' : `${r.timesBestPeer}×`,
      r.timesFloor === null ? '' : `${r.timesFloor}×`,
      r.timesUninstrumented === null ? '' : `${r.timesUninstrumented}× / ${cell(r.cpuTimesUninstrumented)}×`,
      r.clientCpuUsPerOp === null ? '' : `${r.clientCpuUsPerOp} / ${cell(r.redisCpuUsPerOp)}`,
      r.handoffOtherP50Ms === null ? '' : `${r.handoffOtherP50Ms} / ${r.handoffOtherP99Ms}`,
      cell(r.maxWaitMs),
      cell(r.writerMaxWaitMs),
      String(r.violations),
    ]),
  };
}
