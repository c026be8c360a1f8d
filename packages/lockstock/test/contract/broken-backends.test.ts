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
});
