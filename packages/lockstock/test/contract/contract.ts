import { describe, it } from 'vitest';
import { contractCases, runContractWithVitest } from '../../src/testing/index.js';
import type { BackendFixture } from './backends.js';

/**
 * The lock contract — lockstock/testing's, the suite a third-party backend runs — on a built-in
 * backend, for `subjects` (every kind by default; kinds the backend does not offer are skipped once
 * its factory is seen to refuse them, from its capabilities).
 */
export function lockContract(backend: BackendFixture<unknown>, subjects?: readonly string[]): void {
  describe('lock contract', () => {
    runContractWithVitest(contractCases(backend, subjects ? { subjects } : {}), it);
  });
}
