import { Redis } from 'ioredis';
import type { HistoryEvent } from '../../src/checker/index.js';
import { checkHistory, sectionEvents, type BoundReport, type SectionRecord } from './history.js';
import { forkFixtures, startTogether } from './processes.js';

export interface BoundProbeResult {
  records: SectionRecord[];
  report: BoundReport;
  /** The probe counter every exclusive section incremented non-atomically (GET, yield, SET). */
  counter: number;
  /** How many exclusive sections ran: the counter's value when none of their updates was lost. */
  exclusive: number;
  /** The sections as a history for lockstock/checker (acquire and release per loop). */
  events: HistoryEvent[];
}

/**
 * The contract's exclusion probe: `processes` OS processes (fixtures/contender.mjs) run critical
 * sections under `subject` — started together, checked from what they recorded and from the probe
 * counter on `probeUrl`. Subject 'none' takes no lock: the control that shows the probe sees overlap.
 */
export async function runBoundProbe(options: {
  backend: unknown;
  subject: string;
  name: string;
  probeUrl: string;
  processes: number;
  loops: number;
  sections: number;
}): Promise<BoundProbeResult> {
  const { processes, ...config } = options;
  const contenders = forkFixtures(
    'contender.mjs',
    Array.from({ length: processes }, () => [JSON.stringify(config)]),
  );
  try {
    await startTogether(contenders); // every process is ready before any of them starts
    const done = await Promise.all(contenders.map((c) => c.next('done')));
    await Promise.all(contenders.map((c) => c.exited));
    const records = done.flatMap((m) => m.records as SectionRecord[]);
    const probe = new Redis(options.probeUrl);
    try {
      const counter = Number((await probe.get(`probe:{${options.name}}:counter`)) ?? 0);
      const exclusive = records.filter((r) => r.mode === 'exclusive').length;
      return { records, report: checkHistory(records), counter, exclusive, events: sectionEvents(records) };
    } finally {
      probe.disconnect();
    }
  } finally {
    for (const contender of contenders) contender.kill();
  }
}
