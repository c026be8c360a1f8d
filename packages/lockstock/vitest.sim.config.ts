import { defineConfig } from 'vitest/config';

/** The simulation's long run (npm run sim): no servers, one file, no time limit worth the name. */
export default defineConfig({
  test: {
    name: 'lockstock-sim',
    include: ['test/sim/soak.sim.ts'],
    testTimeout: 24 * 3_600_000,
    pool: 'forks',
  },
});
