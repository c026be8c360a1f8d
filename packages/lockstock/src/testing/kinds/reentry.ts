/**
 * Two kinds' own rules about what a hold is made of. Reentrant kinds: an owner's holds count to their
 * depth, keep one token, and free the lock only at the last release — another owner is refused until
 * then. Multi-lock: all parts or none — a refused or timed-out multi-lock leaves no part held.
 */
import type { LockClient, ReentrantLock } from '../../locks/types.js';
import { lockName, type CaseMaker } from '../case-kit.js';
import { CONTRACT_SUBJECTS } from '../subjects.js';
import { demand } from '../violation.js';

const DEPTH = 3;

/** Adds the depth case of the reentrant subject `label` (reentrant, fair, spin, write). */
export function reentryCases(maker: CaseMaker, label: string): void {
  const subject = CONTRACT_SUBJECTS[label]!;
  const make = (client: LockClient, name: string) => subject.make(client, name) as ReentrantLock;
  const kind = { label, families: subject.families, refuses: (c: LockClient) => make(c, lockName(label)) };
  maker.add(
    kind,
    `re-entered ${DEPTH} deep, it keeps one token and frees the lock only at the last release`,
    false,
    async (clients) => {
      const name = lockName(`${label}-depth`);
      const [mine, other] = [make(await clients.client(), name), make(await clients.client(), name)];
      const holds = [];
      for (let depth = 1; depth <= DEPTH; depth++) {
        holds.push(await mine.acquire({ owner: 'owner', waitMs: 5_000 }));
        const count = await mine.holdCount('owner');
        demand(count === depth, label, () => `holdCount() said ${count} at depth ${depth}`);
      }
      const tokens = holds.map((h) => h.fencingToken);
      demand(
        tokens.every((t) => t === tokens[0]),
        label,
        () => `re-entry changed the token`,
        () => `tokens ${tokens.join(', ')}`,
      );
      for (let depth = DEPTH; depth >= 1; depth--) {
        const intruder = await other.tryAcquire({ owner: 'other' });
        demand(
          intruder === undefined,
          label,
          () => `another owner was granted while owner held it ${depth} deep`,
          () => `other got token ${intruder!.fencingToken} beside owner's token ${tokens[0]}`,
        );
        const outcome = await holds[depth - 1]!.release();
        const expected = depth > 1 ? 'still_held' : 'released';
        const count = await mine.holdCount('owner');
        demand(
          outcome === expected && count === depth - 1,
          label,
          () => `a release at depth ${depth} answered '${outcome}' with holdCount() ${count}`,
          () => `expected '${expected}' and ${depth - 1}`,
        );
      }
      const after = await other.tryAcquire({ owner: 'other' });
      demand(after !== undefined, label, () => `the lock stayed held after the last of ${DEPTH} releases`);
      await after!.release();
    },
  );
}

/** Adds the multi-lock's all-or-nothing case (its parts: the contract subject's reentrant and mutex). */
export function multiLockCases(maker: CaseMaker): void {
  const subject = CONTRACT_SUBJECTS['multi-lock']!;
  const kind = {
    label: 'multi-lock',
    families: subject.families,
    refuses: (c: LockClient) => subject.make(c, lockName('multi-lock')),
  };
  maker.add(
    kind,
    'all parts or none: a refused or timed-out multi-lock leaves no part held',
    false,
    async (clients) => {
      const name = lockName('multi-lock-parts');
      const [client, blocker, observer] = [
        await clients.client(),
        await clients.client(),
        await clients.client(),
      ];
      const multi = subject.make(client, name);
      // The same parts, seen from another client (subjects.ts: a reentrant `:b` and a mutex `:a`).
      const parts = () =>
        Promise.all([observer.reentrant(`${name}:b`).isLocked(), observer.mutex(`${name}:a`).isLocked()]);
      const blocking = await blocker.mutex(`${name}:a`).acquire({ owner: 'blocker' });
      const tried = await multi.tryAcquire({ owner: 'multi' });
      const triedParts = await parts();
      const waited = await multi.tryAcquire({ owner: 'multi', waitMs: 200 });
      const waitedParts = await parts();
      demand(
        tried === undefined && waited === undefined,
        'multi-lock',
        () => `it was granted with one part held by another owner`,
        () => `blocker held part :a; multi got token ${(tried ?? waited)!.fencingToken}`,
      );
      demand(
        !triedParts[0] && !waitedParts[0],
        'multi-lock',
        () => `a refused multi-lock left a part held`,
        () =>
          `part :b still held after ${triedParts[0] ? 'a refused try' : 'a try that waited 200 ms'} while ` +
          `blocker held :a`,
      );
      await blocking.release();
      const handle = await multi.acquire({ owner: 'multi', waitMs: 30_000 });
      const heldParts = await parts();
      demand(
        heldParts.every(Boolean),
        'multi-lock',
        () => `a granted multi-lock does not hold every part`,
        () => `parts :b, :a held: ${heldParts.join(', ')}`,
      );
      await handle.release();
      const freed = await parts();
      demand(
        !freed.some(Boolean),
        'multi-lock',
        () => `a released multi-lock left a part held`,
        () => `parts :b, :a held: ${freed.join(', ')}`,
      );
    },
  );
}
