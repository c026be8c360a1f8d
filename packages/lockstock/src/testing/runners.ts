/**
 * Registers the contract's cases with a test runner. Both take the runner's own `test` (or `it`)
 * function, so lockstock depends on neither runner.
 */
import type { ContractCase, ContractCaseContext } from './cases.js';

/** Vitest's `test`/`it`: `(name, { timeout, skip }, fn)`; its context's `skip(note)` ends the test. */
export type VitestTest = (
  name: string,
  options: { timeout: number; skip: boolean },
  fn: (context: { skip(note?: string): void }) => Promise<void>,
) => unknown;

/** node:test's `test`/`it`: `(name, { timeout, skip }, fn)`; its context's `skip(message)` marks the test. */
export type NodeTest = (
  name: string,
  options: { timeout: number; skip: boolean | string },
  fn: (context: { skip(message?: string): void }) => Promise<void>,
) => unknown;

/** Registers `cases` with Vitest: `runContractWithVitest(contractCases(myBackend), test)`. */
export function runContractWithVitest(cases: readonly ContractCase[], test: VitestTest): void {
  for (const c of cases) {
    test(c.name, { timeout: c.timeoutMs, skip: c.skip !== undefined }, (context) =>
      c.run({ skip: (reason) => context.skip(reason) }),
    );
  }
}

/** Registers `cases` with node:test: `runContractWithNodeTest(contractCases(myBackend), test)`. */
export function runContractWithNodeTest(cases: readonly ContractCase[], test: NodeTest): void {
  for (const c of cases) {
    test(c.name, { timeout: c.timeoutMs, skip: c.skip ?? false }, (context) => {
      const runner: ContractCaseContext = { skip: (reason) => context.skip(reason) };
      return c.run(runner);
    });
  }
}
