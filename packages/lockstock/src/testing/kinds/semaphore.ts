/**
 * A semaphore's own rules: never more holders than its permits — with sections that really overlap,
 * each staying inside until one holder too many got in or a while passed, across OS processes — every
 * permit usable at once, and the count it reports (available(), inspect().holders) the count held.
 */
import type { LockFamily } from '../../locks/core/spi.js';
import type { LockClient, Semaphore } from '../../locks/types.js';
import { assertBound } from '../bound-check.js';
import { lockName, type CaseMaker } from '../case-kit.js';
import { contendersOf, runProbe } from '../probe.js';
import { CONTRACT_SUBJECTS } from '../subjects.js';
import { demand, describeSections, originOf } from '../violation.js';

const PROCESSES = 4;
const LOOPS = 2;
const SECTIONS = 5;
/** How long a section stays inside unless one holder too many joins it, ms. */
const LINGER_MS = 100;

/** Adds the own cases of the semaphore subject `label` ('semaphore' or 'counter-semaphore'). */
function semaphoreCases(maker: CaseMaker, label: string, family: LockFamily): void {
  const subject = CONTRACT_SUBJECTS[label]!;
  const permits = subject.bound;
  const make = (client: LockClient, name: string) => subject.make(client, name) as Semaphore;
  const kind = { label, families: [family], refuses: (client: LockClient) => make(client, lockName(label)) };
  const where = maker.backend.processes ? 'OS processes' : 'clients of one process';

  maker.add(
    kind,
    `never more than its ${permits} permits inside at once, in sections that overlap, across ${PROCESSES} ${where}`,
    false,
    async () => {
      const probe = await runProbe(contendersOf(maker.backend, PROCESSES, { watchdogTimeoutMs: 5_000 }), {
        subject: label,
        name: lockName(`${label}-overlap`),
        loops: LOOPS,
        sections: SECTIONS,
        linger: { crowd: permits + 1, maxMs: LINGER_MS },
      });
      assertBound(label, subject, probe);
      // Every permit can be used at once: a semaphore that admits fewer is a smaller one.
      demand(
        probe.crowd.length === permits,
        label,
        () => `its ${permits} permits were never all in use at once: at most ${probe.crowd.length} holders`,
        () => describeSections(probe.crowd, originOf(probe.records)),
      );
    },
  );

  maker.add(kind, 'reports the count held: available() and inspect().holders', false, async (clients) => {
    const name = lockName(`${label}-count`);
    const holders = await Promise.all(Array.from({ length: permits }, () => clients.client()));
    const observer = make(await clients.client(), name);
    const said = async () => ({
      available: await observer.available(),
      holders: (await observer.inspect()).holders,
    });
    const expect = async (held: number, when: string) => {
      const seen = await said();
      demand(
        seen.available === permits - held && seen.holders === held,
        label,
        () => `it reported the wrong count ${when}`,
        () =>
          `${held} of ${permits} permits held, yet available() said ${seen.available} and ` +
          `inspect().holders ${seen.holders}`,
      );
    };
    await expect(0, 'before any acquire');
    const handles = [];
    for (const [i, client] of holders.entries()) {
      handles.push(await make(client, name).acquire({ owner: `holder-${i}` }));
      await expect(i + 1, `after acquire ${i + 1}`);
    }
    const extra = await observer.tryAcquire({ owner: 'one-too-many' });
    demand(
      extra === undefined,
      label,
      () => `a try was granted a permit with all ${permits} held`,
      () => `owner one-too-many got token ${extra!.fencingToken} while holder-0..${permits - 1} held theirs`,
    );
    await handles[0]!.release();
    await expect(permits - 1, 'after a release');
    await Promise.all(handles.slice(1).map((h) => h.release()));
    await expect(0, 'after every release');
  });
}

/** The semaphore's own cases. */
export const semaphore = (maker: CaseMaker): void => semaphoreCases(maker, 'semaphore', 'semaphore');
/** The counter semaphore's own cases (the same rules; its permits have no lease). */
export const counterSemaphore = (maker: CaseMaker): void =>
  semaphoreCases(maker, 'counter-semaphore', 'counter-semaphore');
