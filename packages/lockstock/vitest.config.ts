import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    name: 'lockstock',
    include: ['test/**/*.test.ts'],
    globalSetup: ['test/global-setup.ts'],
    // Tests start real servers and OS processes; generous but finite limits.
    testTimeout: 60_000,
    hookTimeout: 120_000,
    pool: 'forks',
    // expect.poll waits on real servers and processes (a new session, a fresh connection): Vitest's
    // default of 1 s is too short for a loaded machine.
    expect: { poll: { timeout: 10_000 } },
  },
});
