/**
 * Each kind's own rules, beyond the generic cases every lock subject gets: what makes a fair lock
 * fair, a semaphore a semaphore, a latch a latch. A kind here that is no lock subject (`latch`,
 * `election`) has only these.
 */
import type { CaseMaker } from '../case-kit.js';
import { electionCases } from './election.js';
import { fairCases } from './fair.js';
import { latchCases } from './latch.js';
import { readWriteCases } from './read-write.js';
import { multiLockCases, reentryCases } from './reentry.js';
import { counterSemaphore, semaphore } from './semaphore.js';

/** The kind's own cases, by kind (a key of CONTRACT_SUBJECTS, or a kind of its own). */
export const KIND_CONTRACTS: Readonly<Record<string, (maker: CaseMaker) => void>> = Object.freeze({
  reentrant: (maker: CaseMaker) => reentryCases(maker, 'reentrant'),
  fair: (maker: CaseMaker) => {
    fairCases(maker);
    reentryCases(maker, 'fair');
  },
  spin: (maker: CaseMaker) => reentryCases(maker, 'spin'),
  write: (maker: CaseMaker) => reentryCases(maker, 'write'),
  'read-write': readWriteCases,
  semaphore,
  'counter-semaphore': counterSemaphore,
  'multi-lock': multiLockCases,
  latch: latchCases,
  election: electionCases,
});
