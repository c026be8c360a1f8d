import { configDefaults, defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    name: 'service',
    include: ['test/**/*.test.ts'],
    // The full fault suite runs on its own (npm run test:faults); its quick rows are in here.
    exclude: [...configDefaults.exclude, 'test/faults/suite.test.ts'],
    globalSetup: ['test/global-setup.ts'],
    // Tests start real servers and OS processes; generous but finite limits.
    testTimeout: 60_000,
    hookTimeout: 120_000,
    pool: 'forks',
    // expect.poll waits on real servers and processes (a new session, a fresh connection): Vitest's
    // default of 1 s is too short for a loaded machine.
    expect: { poll: { timeout: 10_000 } },
    // `serve` defaults to one HTTP process per core; the suites start one unless a test asks for more
    // (test/cli/serve-processes.test.ts, and the first hour, which runs the default as users do).
    env: { LOCKSTOCK_PROCESSES: '1' },
  },
});
