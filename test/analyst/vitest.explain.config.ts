import path from 'node:path';
import { defineConfig } from 'vitest/config';
import base from '../../vitest.config.js';

/**
 * `npm run test:explain`: the query plans of the example queries on a benchmark-sized warehouse
 * (test/analyst/*.explain.ts). Apart from `npm test` because filling a million rows keeps both
 * cores busy for about 20 s, which would slow every other test file running beside it.
 */
export default defineConfig({
  ...base,
  root: path.resolve(import.meta.dirname, '../..'),
  test: {
    ...base.test,
    include: ['test/analyst/**/*.explain.ts', 'test/load/**/*.explain.ts'],
  },
});
