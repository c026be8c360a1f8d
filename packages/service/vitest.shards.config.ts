import { defineConfig } from 'vitest/config';

/**
 * `npm run test:shards`: the full multi-process proof of split sales (20,000 units, 50,000 buyers),
 * and the same proof under a part's faults (faults.shards.ts).
 */
export default defineConfig({
  test: {
    name: 'shards',
    include: ['test/shards/*.shards.ts'],
    globalSetup: ['test/global-setup.ts'],
    testTimeout: 600_000,
    hookTimeout: 120_000,
    pool: 'forks',
    // `serve` defaults to one HTTP process per core; the suites start one unless a test asks for more
    // (test/cli/serve-processes.test.ts, and the first hour, which runs the default as users do).
    env: { LOCKSTOCK_PROCESSES: '1' },
  },
});
