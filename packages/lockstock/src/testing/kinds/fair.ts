/**
 * A fair lock's own rule: it is granted in the order its waiters were queued by the store, across
 * clients — whoever releases, and however fast a newcomer or the releaser's own waiter tries. Judged
 * by lockstock/checker's FIFO rule (L6) on the recorded history, where a waiter's place is known from
 * the store's own answer: its first refused try (the try of a waiter that will wait queues it).
 */
import { checkLockHistory, type HistoryEvent } from '../../checker/index.js';
import type { LockClient, LockHandle } from '../../locks/types.js';
import { lockName, type CaseMaker } from '../case-kit.js';
import { settlement } from '../check.js';
import { demand, msFrom } from '../violation.js';
import { observeRefusals } from './refusals.js';

/** Waiters queued one after another, the last one on the releasing holder's own client. */
const WAITERS = 5;
/** How long a step (a waiter queued, the lock passed on) may take on a loaded machine, ms. */
const STEP_BOUND_MS = 30_000;

/** Adds the fair lock's own cases. */
export function fairCases(maker: CaseMaker): void {
  const kind = {
    label: 'fair',
    families: ['fair'] as const,
    refuses: (client: LockClient) => client.fair(lockName('fair')),
  };
  maker.add(
    kind,
    'grants in the order the store queued its waiters, across clients (newcomers and the releaser wait their turn)',
    false,
    async (clients, _offered, context) => {
      const name = lockName('fair-order');
      const events: HistoryEvent[] = [];
      const now = () => String(process.hrtime.bigint());
      const queued = new Map<string, () => void>();
      const refused = (owner: string) => {
        const known = queued.get(owner);
        if (!known) return;
        queued.delete(owner);
        events.push({ proc: owner, type: 'ok', f: 'queued', lock: name, t: now() });
        known();
      };
      const holderClient = await clients.client();
      const others = await Promise.all(Array.from({ length: WAITERS - 1 }, () => clients.client()));
      for (const client of [holderClient, ...others]) {
        if (!observeRefusals(client, 'fair', refused)) {
          context.skip('its client is no LockClientBase: the store’s answers to its waiters cannot be seen');
          return;
        }
      }
      const origin = process.hrtime.bigint();
      const recordAcquire = async (owner: string, acquire: () => Promise<LockHandle | undefined>) => {
        events.push({ proc: owner, type: 'invoke', f: 'acquire', lock: name, t: now() });
        const handle = await acquire();
        events.push(
          handle
            ? {
                proc: owner,
                type: 'ok',
                f: 'acquire',
                lock: name,
                t: now(),
                owner,
                token: handle.fencingToken,
              }
            : { proc: owner, type: 'fail', f: 'acquire', lock: name, t: now() },
        );
        return handle;
      };
      const recordRelease = async (owner: string, handle: LockHandle) => {
        events.push({ proc: owner, type: 'invoke', f: 'release', lock: name, t: now() });
        await handle.release();
        events.push({ proc: owner, type: 'ok', f: 'release', lock: name, t: now() });
      };

      const held = await recordAcquire('holder', () => holderClient.fair(name).acquire({ owner: 'holder' }));
      const waiting: Array<Promise<unknown>> = [];
      for (let i = 0; i < WAITERS; i++) {
        // The last waiter is the holder's own client's: it hears the release first.
        const client = i < WAITERS - 1 ? others[i]! : holderClient;
        const owner = `waiter-${i}`;
        const isQueued = new Promise<void>((resolve) => queued.set(owner, resolve));
        const served = recordAcquire(owner, () => client.fair(name).acquire({ owner })).then((handle) =>
          recordRelease(owner, handle!),
        );
        waiting.push(served);
        // Queued before the next one begins: the store's answer orders them, not a race.
        const first = await settlement(Promise.race([isQueued, served.then(() => 'granted')]), STEP_BOUND_MS);
        demand(
          first !== 'granted',
          'fair',
          () => `${owner} was granted while the holder held it`,
          () => `the holder (token ${held!.fencingToken}) never released; ${owner}'s acquire returned a hold`,
        );
        demand(
          first !== 'pending',
          'fair',
          () => `${owner}'s try was neither refused nor granted within ${STEP_BOUND_MS} ms`,
        );
      }
      // The release and a newcomer's try leave together: a lock without a queue lets the newcomer in.
      const released = recordRelease('holder', held!);
      const newcomer = recordAcquire('newcomer', () =>
        holderClient.fair(name).tryAcquire({ owner: 'newcomer' }),
      );
      await released;
      const intruder = await newcomer;
      if (intruder) await recordRelease('newcomer', intruder);
      const served = await Promise.all(waiting.map((w) => settlement(w, STEP_BOUND_MS)));
      const stuck = served.flatMap((outcome, i) => (outcome === 'pending' ? [`waiter-${i}`] : []));
      demand(
        stuck.length === 0,
        'fair',
        () => `queued waiters were never granted within ${STEP_BOUND_MS} ms of their turn`,
        () => `still waiting: ${stuck.join(', ')}`,
      );
      for (const outcome of served) if (outcome instanceof Error) throw outcome;

      const report = checkLockHistory(events, { fair: true });
      // The first grant out of turn is the one to tell (later ones may only follow from it).
      const overtaken = [...report.checks.fifo.violations].sort((a, b) =>
        BigInt(a.grantedAt) < BigInt(b.grantedAt) ? -1 : 1,
      )[0];
      demand(
        overtaken === undefined,
        'fair',
        () =>
          `${overtaken!.by} was granted ahead of ${overtaken!.overtaken}, which the store had queued first`,
        () =>
          `${overtaken!.overtaken} queued at ${msFrom(origin, overtaken!.queuedAt)} ms; ${overtaken!.by} called ` +
          `acquire at ${msFrom(origin, overtaken!.invokedAt)} ms and was granted at ` +
          `${msFrom(origin, overtaken!.grantedAt)} ms (grant order: ${grantOrder(events).join(', ')})`,
      );
      const overlap = report.checks.exclusion.violations[0];
      demand(
        overlap === undefined,
        'fair',
        () => `two holders inside at once where one must be alone`,
        () => `owners ${overlap!.owners.join(' and ')} from ${msFrom(origin, overlap!.at)} ms`,
      );
    },
  );
}

/** Who was granted, in the order of the grants. */
function grantOrder(events: readonly HistoryEvent[]): string[] {
  return events.filter((e) => e.f === 'acquire' && e.type === 'ok').map((e) => e.proc);
}
