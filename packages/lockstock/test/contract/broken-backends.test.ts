import { afterAll, describe, expect, it } from 'vitest';
import { LocalLockClient, type LocalBackend } from '../../src/local/index.js';
import { contractCases, type ContractBackend, type ContractCase } from '../../src/testing/index.js';

// The contract's own negative controls: the in-process backend with one rule of a kind broken, as a
// backend written from the docs alone might break it. Each break must fail the suite — the case that
// checks the rule, with the sentence that says what broke — or the check could not fail at all.

const made: LocalLockClient[] = [];
afterAll(async () => {
  await Promise.all(made.map((c) => c.close()));
});

let namespaces = 0;

/** The local backend with `breakIt` applied to each client's backend before any lock is made. */
function broken(breakIt: (backend: LocalBackend) => void): ContractBackend {
  const namespace = `broken-${process.pid}-${++namespaces}`;
  return {
    client(options = {}) {
      const client = new LocalLockClient({ namespace, ...options });
      breakIt(client.backend);
      made.push(client);
      return client;
    },
    async breakHolds(client, lock) {
      await (client as LocalLockClient).forceUnlock(lock);
    },
  };
}

/** Runs `name` of the backend's cases and answers how it failed (or 'passed'). */
async function outcome(cases: readonly ContractCase[], name: string): Promise<string> {
  const found = cases.find((c) => c.name === name);
  if (!found) throw new Error(`no case ${name}: ${cases.map((c) => c.name).join(' | ')}`);
  try {
    await found.run({ skip: (reason) => expect.unreachable(`skipped: ${reason}`) });
    return 'passed';
  } catch (error) {
    return (error as Error).message;
  }
}

describe('the contract fails a backend that breaks a rule of its kind', () => {
  it('a fair lock without a queue: a waiter queued later, or a newcomer, is granted first', async () => {
    // Its fair locks are plain reentrant locks: nothing remembers who waited first.
    const backend = broken((b) => {
      b.fair = (name) => b.reentrant(name);
    });
    const cases = contractCases(backend, { subjects: ['fair'] });
    const failure = await outcome(
      cases,
      'fair: grants in the order the store queued its waiters, across clients (newcomers and the releaser wait their turn)',
    );
    expect(failure).toMatch(
      /^fair: (waiter-\d|newcomer) was granted ahead of waiter-\d, which the store had queued first: waiter-\d queued at [\d.]+ ms; .* called acquire at [\d.]+ ms and was granted at [\d.]+ ms \(grant order: /,
    );
    // The generic cases cannot tell it from a fair lock: only the kind's own rule catches it.
    expect(await outcome(cases, 'fair: fencing tokens strictly increase across holders')).toBe('passed');
  });

  it('a semaphore that grants one permit too many: 4 holders inside at once with 3 permits', async () => {
    const backend = broken((b) => {
      const semaphore = b.semaphore.bind(b);
      b.semaphore = (name, permits) => semaphore(name, permits + 1);
    });
    const cases = contractCases(backend, { subjects: ['semaphore'] });
    const failure = await outcome(
      cases,
      'semaphore: never more than its 3 permits inside at once, in sections that overlap, across 4 clients of one process',
    );
    expect(failure).toMatch(
      /^semaphore: 4 holders inside at once with 3 permits( \(by the probe log's order\))?: owner \S+ \(token \d+, pid \d, shared\) held from [\d.]+ to [\d.]+ ms; (owner .*; ){2}owner .* ms$/,
    );
    expect(await outcome(cases, 'semaphore: reports the count held: available() and inspect().holders')).toBe(
      'semaphore: it reported the wrong count before any acquire: 0 of 3 permits held, yet available() said 4 and inspect().holders 0',
    );
  });

  it('a latch that opens one count early: its waiters are through before zero', async () => {
    const backend = broken((b) => {
      const latch = b.latch.bind(b);
      b.latch = (name) => {
        const made = latch(name);
        const countDown = made.countDown.bind(made);
        // At one left it counts down once more: the waiters are released a count early.
        return Object.assign(made, {
          countDown: async () => {
            const left = await countDown();
            return left === 1 ? countDown() : left;
          },
        });
      };
    });
    const failure = await outcome(
      contractCases(backend, { subjects: ['latch'] }),
      'latch: releases none of 4 waiters on other clients before zero, and all of them at zero',
    );
    expect(failure).toMatch(
      /^latch: 5 waiters were released before the count reached zero \(after 2 of 3 count-downs\): count-down 1 answered 2 at [\d.]+ ms; count-down 2 answered 0 at [\d.]+ ms; waiter-0 answered true at [\d.]+ ms; .*a fresh wait\(\) answered true$/,
    );
  });

  it('a lost hold never reported: it fails within its lease plus the margin, saying so', async () => {
    // Its renewals say 'extended' whatever the store holds: a force-unlocked hold is never found lost.
    const backend = broken((b) => {
      const mutex = b.mutex.bind(b);
      b.mutex = (name) => Object.assign(mutex(name), { extend: async () => 'extended' as const });
    });
    const cases = contractCases(backend, { subjects: ['mutex'] });
    const started = performance.now();
    const failure = await outcome(cases, 'mutex: a lost lease aborts the signal and is reported');
    expect(failure).toMatch(
      /^mutex: a hold ended behind its holder's back was never reported within its lease \(300 ms\) plus 15000 ms: owner \S+ \(token \d+\) broken at 0 ms, still unaware at \d+ ms: its signal never aborted, no 'lost' event came$/,
    );
    // Well before the case's own time limit: the runner's bare timeout never has to say it.
    expect(performance.now() - started).toBeLessThan(
      cases.find((c) => c.name.includes('lost lease'))!.timeoutMs,
    );
  }, 60_000);

  it('a mutex that grants twice: its bound check names the two holders, not an object dump', async () => {
    // Its mutexes are 2-permit semaphores.
    const backend = broken((b) => {
      b.mutex = (name) => b.semaphore(name, 2);
    });
    const failure = await outcome(
      contractCases(backend, { subjects: ['mutex'] }),
      'mutex: holds its bound across 4 clients of one process',
    );
    expect(failure).toMatch(
      /^mutex: two holders inside at once where one must be alone: owner \S+ \(token \d+, pid \d\) held from [\d.]+ to [\d.]+ ms; owner \S+ \(token \d+, pid \d\) held from [\d.]+ to [\d.]+ ms$/,
    );
  });
});
