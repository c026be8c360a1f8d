import type { LockClient, LockHandle } from '../../src/index.js';
import { SUBJECTS } from '../contract/subjects.mjs';
import type { BoundProbeResult } from './bound-probe.js';
import { checkHistory, sectionEvents, type SectionRecord } from './history.js';

/**
 * The contract's exclusion probe for a backend whose holds live in one process (the local backend):
 * `processes` clients of this process stand for the OS processes of `runBoundProbe`, each running
 * `loops` async loops of `sections` critical sections, exactly as fixtures/contender.mjs does —
 * exclusive sections increment a counter non-atomically (read, yield, write), every section counts
 * itself in and out of "inside". The counters are plain variables: every client shares this process.
 */
export async function runInProcessProbe(
  client: (options: { watchdogTimeoutMs?: number }) => LockClient,
  options: {
    backend: unknown;
    subject: string;
    name: string;
    processes: number;
    loops: number;
    sections: number;
  },
): Promise<BoundProbeResult> {
  const subject = SUBJECTS[options.subject];
  if (!subject) throw new Error(`no subject ${options.subject}`);
  const { watchdogTimeoutMs } = options.backend as { watchdogTimeoutMs?: number };
  const tick = () => new Promise((resolve) => setImmediate(resolve));
  const probe = { counter: 0, inside: 0 };
  const records: SectionRecord[] = [];
  const loop = async (locks: LockClient, pid: number, loopIndex: number) => {
    for (let i = 0; i < options.sections; i++) {
      let mode: 'exclusive' | 'shared' = subject.bound === 1 ? 'exclusive' : 'shared';
      let lock = subject.make(locks, options.name);
      if (subject.mixed) ({ mode, lock } = subject.mixed(locks, options.name, loopIndex + i));
      const invokedAt = process.hrtime.bigint();
      const handle: LockHandle = await lock.acquire();
      const acquiredAt = process.hrtime.bigint();
      const inside = ++probe.inside;
      if (mode === 'exclusive') {
        const value = probe.counter;
        await tick();
        probe.counter = value + 1;
      } else {
        await tick();
        await tick();
      }
      probe.inside--;
      const releasingAt = process.hrtime.bigint();
      const outcome = await handle.release();
      const releasedAt = process.hrtime.bigint();
      records.push({
        pid,
        mode,
        owner: handle.owner,
        token: handle.fencingToken,
        loop: loopIndex,
        invokedAt: String(invokedAt),
        acquiredAt: String(acquiredAt),
        releasingAt: String(releasingAt),
        releasedAt: String(releasedAt),
        inside,
        outcome,
      });
    }
  };
  const clients = Array.from({ length: options.processes }, () => client({ watchdogTimeoutMs }));
  await Promise.all(
    clients.flatMap((locks, p) => Array.from({ length: options.loops }, (_, l) => loop(locks, p + 1, l))),
  );
  const exclusive = records.filter((r) => r.mode === 'exclusive').length;
  return {
    records,
    report: checkHistory(records),
    counter: probe.counter,
    exclusive,
    events: sectionEvents(records),
  };
}
