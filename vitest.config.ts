import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    globalSetup: ['test/helpers/global-setup.ts'],
    // Every property test on a fixed seed (PROPERTY_SEED overrides it).
    setupFiles: ['test/helpers/property-seed.ts'],
    testTimeout: 60_000,
    hookTimeout: 120_000,
    // Files run in parallel: each gets its own database (test/helpers/database.ts).
    pool: 'forks',
  },
});
