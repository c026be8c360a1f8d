/**
 * A count-down latch's own rules: none of its waiters is released before the count reaches zero, all
 * of them are at zero, each count-down answers the count left, a count is set once while counting,
 * and a waiter that comes after zero passes at once. Waiters and count-downs are on separate clients;
 * the verdict is read from when each waiter was answered against when the last count-down was sent.
 */
import type { LockClient } from '../../locks/types.js';
import { lockName, type CaseMaker } from '../case-kit.js';
import { settlement } from '../check.js';
import { demand, msFrom } from '../violation.js';

const COUNT = 3;
const WAITERS = 4;
/** How long a fresh waiter waits, one count before zero, for a release that must not come, ms. */
const EARLY_WAIT_MS = 1_000;
/** How long all waiters may take to be released once the count is zero, on a loaded machine, ms. */
const RELEASE_BOUND_MS = 30_000;

/** Adds the latch's own cases. */
export function latchCases(maker: CaseMaker): void {
  const kind = {
    label: 'latch',
    families: ['latch'] as const,
    refuses: (client: LockClient) => client.countDownLatch(lockName('latch')),
  };
  maker.add(
    kind,
    `releases none of ${WAITERS} waiters on other clients before zero, and all of them at zero`,
    false,
    async (clients) => {
      const name = lockName('latch');
      const origin = process.hrtime.bigint();
      const at = () => msFrom(origin, process.hrtime.bigint());
      const latchOf = async () => (await clients.client()).countDownLatch(name);
      const setter = await latchOf();
      demand(
        await setter.trySetCount(COUNT),
        'latch',
        () => `trySetCount(${COUNT}) on a new latch answered false`,
      );
      demand(
        !(await setter.trySetCount(COUNT + 2)),
        'latch',
        () => `trySetCount(${COUNT + 2}) while it counted down from ${COUNT} answered true`,
      );
      const answers: Array<{ value: unknown; at: string } | undefined> = [];
      const waiters = await Promise.all(Array.from({ length: WAITERS }, () => latchOf()));
      const waiting = waiters.map((latch, i) =>
        latch.wait().then(
          (value) => void (answers[i] = { value, at: at() }),
          (error: unknown) => void (answers[i] = { value: error, at: at() }),
        ),
      );
      const counters = await Promise.all(Array.from({ length: COUNT }, () => latchOf()));
      const downs: string[] = [];
      const lefts: number[] = [];
      for (let i = 0; i < COUNT - 1; i++) {
        lefts.push(await counters[i]!.countDown());
        downs.push(`count-down ${i + 1} answered ${lefts[i]} at ${at()} ms`);
      }
      // One count before zero: a fresh waiter must wait its whole time, and nobody may be through.
      const early = await (await latchOf()).wait({ waitMs: EARLY_WAIT_MS });
      const through = answers.flatMap((a, i) =>
        a ? [`waiter-${i} answered ${String(a.value)} at ${a.at} ms`] : [],
      );
      demand(
        through.length === 0 && !early,
        'latch',
        () =>
          `${through.length + (early ? 1 : 0)} waiters were released before the count reached zero ` +
          `(after ${COUNT - 1} of ${COUNT} count-downs)`,
        () => [...downs, ...through, ...(early ? ['a fresh wait() answered true'] : [])].join('; '),
      );
      const wrong = lefts.findIndex((left, i) => left !== COUNT - i - 1);
      demand(
        wrong < 0,
        'latch',
        () => `count-down ${wrong + 1} of ${COUNT} answered ${lefts[wrong]} left, not ${COUNT - wrong - 1}`,
        () => downs.join('; '),
      );
      const before = await setter.count();
      demand(
        before === 1,
        'latch',
        () => `count() said ${before} after ${COUNT - 1} of ${COUNT} count-downs`,
      );
      const finalAt = at();
      const last = await counters[COUNT - 1]!.countDown();
      downs.push(`count-down ${COUNT} answered ${last} at ${finalAt}–${at()} ms`);
      demand(
        last === 0,
        'latch',
        () => `the last count-down answered ${last} left, not 0`,
        () => downs.join('; '),
      );
      await Promise.all(waiting.map((w) => settlement(w, RELEASE_BOUND_MS)));
      const held = answers.flatMap((a, i) =>
        a?.value === true ? [] : [`waiter-${i}: ${a ? String(a.value) : 'still waiting'}`],
      );
      demand(
        held.length === 0,
        'latch',
        () => `${held.length} of ${WAITERS} waiters were not released within ${RELEASE_BOUND_MS} ms of zero`,
        () => [...downs, ...held].join('; '),
      );
      const after = await setter.count();
      demand(after === 0, 'latch', () => `count() said ${after} after all ${COUNT} count-downs`);
      demand(
        await (await latchOf()).wait({ waitMs: 0 }),
        'latch',
        () => `a wait() after zero was not let through`,
      );
    },
  );
}
