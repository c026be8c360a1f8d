/**
 * A read-write lock's own rules: readers share it, a writer excludes readers and writers, and — as the
 * docs promise — a writer that waits keeps new readers out, so readers cannot starve it. A waiting
 * writer is known from the store's refusal of its waiting try (refusals.ts).
 */
import type { LockClient, LockHandle } from '../../locks/types.js';
import { lockName, type CaseMaker } from '../case-kit.js';
import { settlement } from '../check.js';
import { demand, msFrom } from '../violation.js';
import { observeRefusals } from './refusals.js';

const READERS = 3;
/** How long a step (a refusal, a grant once free) may take on a loaded machine, ms. */
const STEP_BOUND_MS = 30_000;

const LABEL = 'read-write';

/** Adds the read-write lock's own cases. */
export function readWriteCases(maker: CaseMaker): void {
  const kind = {
    label: LABEL,
    families: ['read-write'] as const,
    refuses: (client: LockClient) => client.readWrite(lockName(LABEL)),
  };

  maker.add(
    kind,
    `${READERS} readers on other clients share it; a writer excludes readers and writers`,
    false,
    async (clients) => {
      const name = lockName(LABEL);
      const sides = await Promise.all(
        Array.from({ length: READERS + 1 }, async () => (await clients.client()).readWrite(name)),
      );
      const readers: LockHandle[] = [];
      for (let i = 0; i < READERS; i++) {
        const handle = await sides[i]!.read.tryAcquire({ owner: `reader-${i}` });
        demand(handle !== undefined, LABEL, () => `reader-${i} was refused while only ${i} readers held it`);
        readers.push(handle!);
      }
      const beside = await sides[READERS]!.write.tryAcquire({ owner: 'writer' });
      demand(
        beside === undefined,
        LABEL,
        () => `a writer was granted beside ${READERS} readers`,
        () => `owner writer got token ${beside!.fencingToken} while reader-0..${READERS - 1} held theirs`,
      );
      await Promise.all(readers.map((h) => h.release()));
      const writer = await sides[READERS]!.write.acquire({ owner: 'writer', waitMs: STEP_BOUND_MS });
      const reader = await sides[0]!.read.tryAcquire({ owner: 'reader-late' });
      const other = await sides[1]!.write.tryAcquire({ owner: 'writer-2' });
      demand(
        reader === undefined && other === undefined,
        LABEL,
        () => `${reader ? 'a reader' : 'a second writer'} was granted beside a writer`,
        () =>
          `owner writer (token ${writer.fencingToken}) held the write lock; ` +
          [
            reader && `reader-late got token ${reader.fencingToken}`,
            other && `writer-2 got token ${other.fencingToken}`,
          ]
            .filter(Boolean)
            .join(', '),
      );
      await writer.release();
    },
  );

  maker.add(
    kind,
    'a waiting writer keeps new readers out (readers cannot starve it)',
    false,
    async (clients, _offered, context) => {
      const name = lockName(`${LABEL}-starve`);
      const origin = process.hrtime.bigint();
      const at = () => msFrom(origin, process.hrtime.bigint());
      let writerRefused: (() => void) | undefined;
      const refusedOnce = new Promise<void>((resolve) => (writerRefused = resolve));
      let refusedAt = '';
      const [first, writing, late] = [await clients.client(), await clients.client(), await clients.client()];
      if (
        !observeRefusals(
          writing,
          'readWrite',
          (owner) => owner === 'writer' && ((refusedAt ||= at()), writerRefused!()),
        )
      ) {
        context.skip('its client is no LockClientBase: the store’s answers to its waiters cannot be seen');
        return;
      }
      const reader = await first.readWrite(name).read.acquire({ owner: 'reader-0' });
      const writer = writing.readWrite(name).write.acquire({ owner: 'writer' });
      const refused = await settlement(
        Promise.race([refusedOnce, writer.then(() => 'granted')]),
        STEP_BOUND_MS,
      );
      demand(refused !== 'granted', LABEL, () => `a writer was granted beside reader-0`);
      demand(
        refused !== 'pending',
        LABEL,
        () => `the writer's try was neither refused nor granted within ${STEP_BOUND_MS} ms`,
      );
      // The writer waits (the store refused its waiting try): a reader that comes now must wait too.
      const intruder = await late.readWrite(name).read.tryAcquire({ owner: 'reader-late' });
      const intrudedAt = at();
      if (intruder) await intruder.release();
      demand(
        intruder === undefined,
        LABEL,
        () => `a new reader was let in while a writer waited: readers can starve writers`,
        () =>
          `reader-0 (token ${reader.fencingToken}) held it; the writer was refused at ${refusedAt} ms and waited; ` +
          `reader-late was granted token ${intruder!.fencingToken} at ${intrudedAt} ms`,
      );
      await reader.release();
      const granted = await settlement(writer, STEP_BOUND_MS);
      demand(
        typeof granted === 'object' && granted !== null && 'release' in granted,
        LABEL,
        () =>
          `the waiting writer was not granted within ${STEP_BOUND_MS} ms of the last reader's release: ${String(granted)}`,
      );
      await (granted as LockHandle).release();
      const after = await late.readWrite(name).read.acquire({ owner: 'reader-late', waitMs: STEP_BOUND_MS });
      await after.release();
    },
  );
}
