import { defineConfig } from 'vitest/config';

/** `npm run test:faults`: the fault suite, real processes and real faults, a few minutes. */
export default defineConfig({
  test: {
    name: 'faults',
    include: ['test/faults/suite.test.ts'],
    globalSetup: ['test/global-setup.ts'],
    testTimeout: 180_000,
    hookTimeout: 120_000,
    pool: 'forks',
  },
});
