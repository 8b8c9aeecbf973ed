import { afterAll, beforeAll, describe, it } from 'vitest';
import { createTestDatabase, type TestDatabase } from '../helpers/database.js';
import { checkWatermarkProperty } from './watermark-property.js';

/** Guarantee 2 on the real orchestrator and PostgreSQL, 200 random runs (25 in `npm test`). */
describe('the watermark on the real orchestrator and database', () => {
  let t: TestDatabase;
  beforeAll(async () => {
    t = await createTestDatabase();
  });
  afterAll(() => t.drop());

  it('200 random runs: the invariant at every request, the next plan, and the catch-up', async () => {
    await checkWatermarkProperty(t, 200);
  }, 600_000);
});
