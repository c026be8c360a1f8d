import { defineConfig } from 'vitest/config';

/** `npm run test:faults`: the fault suite, real processes and real faults, a few minutes. */
export default defineConfig({
  test: {
    name: 'faults',
    include: ['test/faults/suite.test.ts', 'test/faults/raffle.test.ts'],
    globalSetup: ['test/global-setup.ts'],
    testTimeout: 180_000,
    hookTimeout: 120_000,
    pool: 'forks',
    // `serve` defaults to one HTTP process per core; the suites start one unless a test asks for more
    // (test/cli/serve-processes.test.ts, and the first hour, which runs the default as users do).
    env: { LOCKSTOCK_PROCESSES: '1' },
  },
});
