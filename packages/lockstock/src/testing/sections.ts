/**
 * The exclusion probe's contender: `loops` async loops, each running `sections` critical sections of
 * one subject's lock. Exclusive sections increment the probe counter non-atomically (read, yield,
 * write); every section logs its entry and exit. The same code runs in fixture processes
 * (fixtures/contender.ts) and, for a backend whose locks live in one process, as clients of the
 * suite's own process.
 */
import type { LockClient, LockHandle } from '../locks/types.js';
import type { SectionRecord } from './history.js';
import type { ProbeRecorder } from './recorder.js';
import { CONTRACT_SUBJECTS } from './subjects.js';

/** The probe's negative control: sections that take no lock (they must be seen to overlap). */
export const NO_LOCK = 'none';

export interface SectionsOptions {
  /** A subject of CONTRACT_SUBJECTS, or NO_LOCK. */
  subject: string;
  name: string;
  loops: number;
  sections: number;
  /**
   * Shared sections stay inside until `crowd` sections are inside at once (then one more than the
   * bound got in: the probe has seen it) or `maxMs` passed, so that holders really overlap and a
   * permit too many is used while the others are still inside. Without it a shared section lasts
   * two event-loop ticks: a semaphore could over-grant and never have its bound's holders inside.
   */
  linger?: { crowd: number; maxMs: number };
}

const tick = () => new Promise((resolve) => setImmediate(resolve));

/** Runs the sections of one contender (`pid` names it in the records and the log). */
export async function runSections(
  client: LockClient | undefined,
  recorder: ProbeRecorder,
  pid: number,
  options: SectionsOptions,
): Promise<SectionRecord[]> {
  const subject = CONTRACT_SUBJECTS[options.subject];
  if (!subject && options.subject !== NO_LOCK) throw new Error(`no contract subject ${options.subject}`);
  if (subject && !client) throw new Error('a subject with a lock needs a client');
  const records: SectionRecord[] = [];
  const loop = async (loopIndex: number) => {
    for (let i = 0; i < options.sections; i++) {
      let mode: SectionRecord['mode'] = !subject || subject.bound === 1 ? 'exclusive' : 'shared';
      let lock = subject?.make(client!, options.name);
      if (subject?.mixed) ({ mode, lock } = subject.mixed(client!, options.name, loopIndex + i));
      const id = `${pid}:${loopIndex}:${i}`;
      const invokedAt = process.hrtime.bigint();
      const handle: LockHandle | undefined = lock ? await lock.acquire() : undefined;
      const acquiredAt = process.hrtime.bigint();
      recorder.enter(id);
      if (mode === 'exclusive') {
        const value = recorder.readCounter();
        await tick();
        recorder.writeCounter(value + 1);
      } else if (options.linger) {
        const until = performance.now() + options.linger.maxMs;
        while (recorder.insideNow() < options.linger.crowd && performance.now() < until) {
          await new Promise((resolve) => setTimeout(resolve, 2));
        }
      } else {
        await tick();
        await tick();
      }
      recorder.exit(id);
      const releasingAt = process.hrtime.bigint();
      const outcome = handle ? await handle.release() : 'none';
      const releasedAt = process.hrtime.bigint();
      records.push({
        pid,
        mode,
        owner: handle?.owner ?? String(pid),
        token: handle?.fencingToken ?? 0,
        loop: loopIndex,
        invokedAt: String(invokedAt),
        acquiredAt: String(acquiredAt),
        releasingAt: String(releasingAt),
        releasedAt: String(releasedAt),
        inside: 0, // filled in from the log (readProbe)
        outcome,
      });
    }
  };
  await Promise.all(Array.from({ length: options.loops }, (_, i) => loop(i)));
  return records;
}
