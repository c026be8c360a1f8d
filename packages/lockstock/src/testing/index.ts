/**
 * `lockstock/testing` — the backend contract suite: the checks every built-in backend passes, for
 * your own backend. Write a `ContractBackend` (how to make a client here and in fixture processes,
 * how to end a lock's holds behind their backs), make its cases with `contractCases`, and register
 * them with your runner: `runContractWithVitest(cases, test)` or `runContractWithNodeTest(cases,
 * test)`. The suite needs no server but your backend's: its probes record to files of a temporary
 * directory, and the histories are checked by `lockstock/checker`. See docs/backend.md.
 *
 * @module lockstock/testing
 */
export type { ContractBackend, ContractClientOptions } from './backend.js';
export {
  contractCases,
  CONTRACT_KINDS,
  type ContractCase,
  type ContractCaseContext,
  type ContractOptions,
} from './cases.js';
export { ContractViolation } from './violation.js';
export { runContractWithNodeTest, runContractWithVitest, type NodeTest, type VitestTest } from './runners.js';
export { CONTRACT_SUBJECTS, type ContractSubject } from './subjects.js';
