import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    name: 'servers',
    include: ['test/**/*.test.ts'],
    globalSetup: ['test/global-setup.ts'],
    // Tests start real servers (JVMs among them); generous but finite limits.
    testTimeout: 60_000,
    hookTimeout: 120_000,
    pool: 'forks',
  },
});
