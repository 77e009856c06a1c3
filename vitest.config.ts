import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['packages/*/test/**/*.test.ts', 'apps/*/test/**/*.test.ts', 'test/**/*.test.ts'],
    testTimeout: 30_000,
    hookTimeout: 60_000,
    pool: 'forks',
    // Removes the fault tests' temp log folders after a green file.
    setupFiles: ['test/support/cleanup-setup.ts'],
    coverage: {
      provider: 'v8',
      include: ['packages/*/src/**/*.ts', 'apps/*/src/**/*.ts'],
      // Process entry points run as child processes in the tests (v8 coverage is per process).
      exclude: ['**/main.ts', '**/server.ts', 'apps/cli/src/demo.ts', 'apps/cli/src/services.ts'],
      reporter: ['text-summary', 'json-summary'],
      thresholds: {
        lines: 80,
        'packages/core/src/**': { lines: 95 },
      },
    },
  },
});
