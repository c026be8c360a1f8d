/**
 * The verdict on an exclusion probe's run, in sentences: each check of what the contenders recorded
 * (intervals, tokens, the probe log's order, the probe counter) and of lockstock/checker's verdict on
 * the same history, failing with the rule broken and the sections that broke it.
 */
import {
  checkLinearizable,
  checkLockHistory,
  mutexModel,
  semaphoreModel,
  type Model,
} from '../checker/index.js';
import { operationsOf, type Operation } from '../checker/history.js';
import type { SectionRecord } from './history.js';
import type { ProbeResult } from './probe.js';
import type { ContractSubject } from './subjects.js';
import {
  demand,
  describeSection,
  describeSections,
  firstExclusiveOverlap,
  mostCrowded,
  msFrom,
  originOf,
} from './violation.js';

/** `with 3 permits`, `where one holder is the bound`. */
export function boundText(bound: number): string {
  return bound === 1 ? 'where one holder is the bound' : `with ${bound} permits`;
}

/** Fails with a sentence unless the probe's run kept `subject`'s exclusion and bound. */
export function assertBound(label: string, subject: ContractSubject, probe: ProbeResult): void {
  const { records, report, counter, exclusive, events, crowd } = probe;
  const origin = originOf(records);
  const unreleased = records.filter((r) => r.outcome !== 'released');
  demand(
    unreleased.length === 0,
    label,
    () => `${unreleased.length} of ${records.length} sections' releases did not answer 'released'`,
    () => unreleased.map((r) => `${describeSection(r, origin)} answered '${r.outcome}'`).join('; '),
  );
  const overlap = firstExclusiveOverlap(records);
  demand(
    overlap === undefined,
    label,
    () => `two holders inside at once where one must be alone`,
    () => describeSections(overlap!, origin),
  );
  demand(
    crowd.length <= subject.bound,
    label,
    () => `${crowd.length} holders inside at once ${boundText(subject.bound)} (by the probe log's order)`,
    () => describeSections(crowd, origin),
  );
  const crowded = mostCrowded(records);
  demand(
    crowded.length <= subject.bound,
    label,
    () => `${crowded.length} holders inside at once ${boundText(subject.bound)}`,
    () => describeSections(crowded, origin),
  );
  demand(
    counter === exclusive,
    label,
    () => `updates were lost: exclusive sections were not alone`,
    () =>
      `the probe counter (read, yield, write in each) reads ${counter} after ${exclusive} exclusive sections`,
  );
  const regression = firstRegression(records);
  demand(
    regression === undefined,
    label,
    () => `fencing tokens went back in acquisition order`,
    () => `${describeSection(regression![0], origin)}, then ${describeSection(regression![1], origin)}`,
  );
  const twice = records.filter((r, i) => records.findIndex((o) => o.token === r.token) !== i)[0];
  demand(
    twice === undefined,
    label,
    () => `token ${twice!.token} was given to two holds`,
    () =>
      describeSections(
        records.filter((r) => r.token === twice!.token),
        origin,
      ),
  );
  if (subject.bound > 1 && subject.bound !== Infinity) {
    demand(
      report.maxInside > 1,
      label,
      () => `the permits were never shared`,
      () => `at most one of ${records.length} sections was inside at any time`,
    );
  }
  // The same sections as a history, checked by lockstock/checker: linearizable against a fenced
  // mutex (tokens grow in the order the lock passed) or a semaphore of the bound.
  if (subject.mixed) return;
  const model = subject.bound === 1 ? mutexModel({ fenced: true }) : semaphoreModel(subject.bound);
  const verdict = checkLinearizable(operationsOf(events), model as Model<unknown>, { timeoutMs: 20_000 });
  const stuck = verdict.counterexample;
  demand(
    verdict.valid !== false,
    label,
    () =>
      `no order of the recorded acquires and releases is a ${subject.bound === 1 ? 'fenced mutex' : `semaphore ${boundText(subject.bound)}`}'s (lockstock/checker)`,
    () =>
      `after ${stuck!.linearized.length} operations it cannot place ${describeOperation(stuck!.stuckAt, origin)}; ` +
      `concurrent with it: ${
        stuck!.concurrent
          .slice(0, 4)
          .map((op) => describeOperation(op, origin))
          .join(', ') || 'none'
      }`,
  );
  if (subject.bound === 1) {
    const checked = checkLockHistory(events);
    const overlapFound = checked.checks.exclusion.violations[0];
    demand(
      checked.valid,
      label,
      () => `lockstock/checker's lock history check failed`,
      () =>
        overlapFound
          ? `owners ${overlapFound.owners.join(' and ')} held it together from ${msFrom(origin, overlapFound.at)} ms`
          : JSON.stringify(checked.checks),
    );
  }
}

/** The first exclusive section, in acquisition order, whose token is not above the one before it. */
function firstRegression(records: readonly SectionRecord[]): [SectionRecord, SectionRecord] | undefined {
  const sorted = records
    .filter((r) => r.mode === 'exclusive')
    .sort((a, b) => (BigInt(a.acquiredAt) < BigInt(b.acquiredAt) ? -1 : 1));
  for (let i = 1; i < sorted.length; i++) {
    if (sorted[i]!.token <= sorted[i - 1]!.token) return [sorted[i - 1]!, sorted[i]!];
  }
  return undefined;
}

/** `the acquire of 123:0 (token 5) called at 10.0 ms, answered at 12.5 ms`. */
function describeOperation(op: Operation, origin: bigint): string {
  const token = op.output?.token === undefined ? '' : ` (token ${String(op.output.token)})`;
  const answered =
    op.output?.t === undefined ? 'never answered' : `answered at ${msFrom(origin, String(op.output.t))} ms`;
  return `the ${op.f} of ${op.proc}${token} called at ${msFrom(origin, String(op.input.t))} ms, ${answered}`;
}
