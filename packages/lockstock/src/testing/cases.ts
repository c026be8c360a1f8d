/**
 * The lock contract as data: one case per check and lock kind, each a name, a time limit, an optional
 * reason to skip it, and an async function that throws when the backend breaks the contract. The
 * checks use the public lock API only and assert with node:assert (and ContractViolation, whose
 * message is the sentence saying what broke), so any test runner can run them (runners.ts registers
 * them with Vitest's or node:test's `test`). Every kind gets the generic cases (generic-cases.ts) and
 * its own rules where it has some (KIND_CONTRACTS, kinds/).
 */
import type { ContractBackend } from './backend.js';
import { CaseMaker, type ContractCase, type ContractOptions } from './case-kit.js';
import { genericCases } from './generic-cases.js';
import { KIND_CONTRACTS } from './kinds/index.js';
import { CONTRACT_SUBJECTS } from './subjects.js';

export type { ContractCase, ContractCaseContext, ContractOptions } from './case-kit.js';

/** Every kind the contract checks: the lock subjects, then the kinds with only rules of their own. */
export const CONTRACT_KINDS: readonly string[] = [
  ...new Set([...Object.keys(CONTRACT_SUBJECTS), ...Object.keys(KIND_CONTRACTS)]),
];

/**
 * The contract's cases for `backend`: for each kind in `options.subjects` (all of CONTRACT_KINDS by
 * default), the generic cases of a lock subject, then the kind's own rules.
 */
export function contractCases(backend: ContractBackend, options: ContractOptions = {}): ContractCase[] {
  const maker = new CaseMaker(backend);
  for (const label of options.subjects ?? CONTRACT_KINDS) {
    const own = KIND_CONTRACTS[label];
    if (!CONTRACT_SUBJECTS[label] && !own)
      throw new Error(`no contract subject ${label} (${CONTRACT_KINDS.join(', ')})`);
    if (CONTRACT_SUBJECTS[label]) genericCases(maker, label);
    own?.(maker);
  }
  return maker.cases;
}
