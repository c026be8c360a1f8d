/**
 * The contract's exclusion probe: contenders run critical sections of one lock, started together;
 * the result is checked from what they recorded (their sections' intervals and tokens, the probe log's
 * order, the probe counter), never from what the locks believed.
 */
import type { HistoryEvent } from '../checker/index.js';
import type { LockClient } from '../locks/types.js';
import type { ContractBackend, ContractClientOptions } from './backend.js';
import { checkHistory, sectionEvents, type BoundReport, type SectionRecord } from './history.js';
import { forkFixtures, startTogether } from './processes.js';
import { makeProbe, ProbeRecorder, readProbe, removeProbe } from './recorder.js';
import { runSections, type SectionsOptions } from './sections.js';

/** What a probe run recorded, and the checks of it. */
export interface ProbeResult {
  records: SectionRecord[];
  report: BoundReport;
  /** The probe counter every exclusive section incremented non-atomically (read, yield, write). */
  counter: number;
  /** How many exclusive sections ran: the counter's value when none of their updates was lost. */
  exclusive: number;
  /** The sections as a history for lockstock/checker (acquire and release per loop). */
  events: HistoryEvent[];
  /** The sections inside at once at the probe log's most crowded moment. */
  crowd: SectionRecord[];
}

/** Where the contenders run: OS processes connecting with a module, or clients of this process. */
export type ProbeContenders =
  | { processes: number; module: string; config: unknown }
  | { processes: number; client: () => LockClient | Promise<LockClient> };

/** The contenders of `backend`: its fixture processes, or clients of this process if it has none. */
export function contendersOf(
  backend: ContractBackend,
  count: number,
  options: ContractClientOptions,
): ProbeContenders {
  const processes = backend.processes;
  if (!processes) return { processes: count, client: () => backend.client(options) };
  const module = processes.module instanceof URL ? processes.module.href : processes.module;
  return { processes: count, module, config: processes.config(options) };
}

/** Runs `options.loops` × `options.sections` sections in each of `contenders.processes` contenders. */
export async function runProbe(contenders: ProbeContenders, options: SectionsOptions): Promise<ProbeResult> {
  const dir = makeProbe();
  try {
    const records =
      'module' in contenders
        ? await inProcesses(contenders, options, dir)
        : await inThisProcess(contenders, options, dir);
    const { counter, insideAtEntry, crowd } = readProbe(dir);
    // Each loop's records come in the order of its sections: their ids as runSections logged them.
    const seen = new Map<string, number>();
    const byId = new Map<string, SectionRecord>();
    for (const record of records) {
      const loop = `${record.pid}:${record.loop}`;
      const index = seen.get(loop) ?? 0;
      seen.set(loop, index + 1);
      record.inside = insideAtEntry.get(`${loop}:${index}`) ?? 0;
      byId.set(`${loop}:${index}`, record);
    }
    const exclusive = records.filter((r) => r.mode === 'exclusive').length;
    return {
      records,
      report: checkHistory(records),
      counter,
      exclusive,
      events: sectionEvents(records),
      crowd: crowd.flatMap((id) => byId.get(id) ?? []),
    };
  } finally {
    removeProbe(dir);
  }
}

async function inProcesses(
  contenders: { processes: number; module: string; config: unknown },
  options: SectionsOptions,
  dir: string,
): Promise<SectionRecord[]> {
  const arg = JSON.stringify({
    backend: { module: contenders.module, config: contenders.config },
    ...options,
    dir,
  });
  const forked = forkFixtures(
    'contender',
    Array.from({ length: contenders.processes }, () => arg),
  );
  try {
    await startTogether(forked); // every process is ready before any of them starts
    const done = await Promise.all(forked.map((p) => p.next('done')));
    await Promise.all(forked.map((p) => p.exited));
    return done.flatMap((m) => m.records as SectionRecord[]);
  } finally {
    for (const p of forked) p.kill();
  }
}

/** Clients of this process stand for the OS processes (pids 1..n); they share the probe's files. */
async function inThisProcess(
  contenders: { processes: number; client: () => LockClient | Promise<LockClient> },
  options: SectionsOptions,
  dir: string,
): Promise<SectionRecord[]> {
  const clients = await Promise.all(Array.from({ length: contenders.processes }, () => contenders.client()));
  const recorder = new ProbeRecorder(dir);
  try {
    const runs = clients.map((client, i) => runSections(client, recorder, i + 1, options));
    return (await Promise.all(runs)).flat();
  } finally {
    recorder.close();
    await Promise.all(clients.map((c) => c.close()));
  }
}
