import { defineConfig } from 'vitest/config';

/**
 * `npm run test:faults`: the lock fault rows at full size (the 10,000-waiter herd, the Sentinel heal),
 * each row reported into docs/faults.json beside the sale's (test/faults-report-setup.ts). `npm test`
 * runs the same files in their quick variants and reports nothing.
 */
export default defineConfig({
  test: {
    name: 'lock-faults',
    include: ['test/faults/**/*.test.ts'],
    globalSetup: ['test/global-setup.ts', 'test/faults-report-setup.ts'],
    env: { LOCKSTOCK_FAULTS_FULL: '1' },
    testTimeout: 180_000,
    hookTimeout: 120_000,
    pool: 'forks',
    // expect.poll waits on real servers and processes (a new session, a fresh connection): Vitest's
    // default of 1 s is too short for a loaded machine.
    expect: { poll: { timeout: 10_000 } },
  },
});
