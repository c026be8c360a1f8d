import { defineConfig } from 'vitest/config';

// `npm test` at the root runs every workspace package's suite (each has its own vitest.config.ts).
export default defineConfig({
  test: {
    projects: ['packages/*'],
    // Two test files at a time. Vitest's default on a 2-core machine is one (cores − 1), but the
    // files mostly wait on real servers and child processes, not on this process's CPU: two at a
    // time halves the wall time, and every test must be right on a loaded machine anyway.
    // LOCKSTOCK_TEST_WORKERS overrides it (1 to run files one by one).
    maxWorkers: Number(process.env.LOCKSTOCK_TEST_WORKERS ?? 2),
  },
});
