import { defineConfig } from 'vitest/config';

// `npm test` at the root runs every workspace package's suite (each has its own vitest.config.ts).
export default defineConfig({
  test: {
    projects: ['packages/*'],
  },
});
