/**
 * Storing what a run learned about a server (src/sync/server-readings.ts). Several workers of one
 * queued run each learn for themselves; a later worker of the run trusts what is stored. So a
 * worker stores only over what it last read or stored: one that read the old reading cannot put
 * it back over the reading another worker re-learned after the server changed.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { emptyReading, type ServerReading } from '../../src/extract/server-reading.js';
import { readServerReadings, saveServerReading } from '../../src/sync/server-readings.js';
import { createTestDatabase, type TestDatabase } from '../helpers/database.js';

const HOUR = 3_600_000;
/** Learned before the server changed: an inclusive startdate (an item an hour after midnight). */
const OLD: ServerReading = { ...emptyReading(), headMs: HOUR, tailMs: 23 * HOUR, order: 'oldest-first' };
/** Re-learned after it changed: nothing proved yet but the order. */
const RELEARNED: ServerReading = { ...emptyReading(), order: 'newest-first', largestResponse: 12 };

describe('storing a server reading over what the writer last saw', () => {
  let t: TestDatabase;
  beforeAll(async () => {
    t = await createTestDatabase();
    await t.db.insertInto('sources').values({ source_id: 's1', base_url: 'http://example.test' }).execute();
  });
  afterAll(() => t?.drop());

  const stored = async () => (await readServerReadings(t.db, 's1')).get('feedback');

  it('the first writer of a reading stores it; a second one that also saw none does not', async () => {
    expect(await saveServerReading(t.db, 's1', 'feedback', OLD, null)).toBe(true);
    expect(await saveServerReading(t.db, 's1', 'feedback', RELEARNED, null)).toBe(false);
    expect(await stored()).toMatchObject({ headMs: HOUR, order: 'oldest-first' });
  });

  it('of two workers that read the old reading, the one that re-learned stores first; the other cannot put the old back', async () => {
    const readByBoth = (await stored()) as ServerReading;
    expect(await saveServerReading(t.db, 's1', 'feedback', RELEARNED, readByBoth)).toBe(true);
    // The other worker never found it stale, and learned one more thing on top of the old reading.
    const oldPlus: ServerReading = { ...OLD, tailMs: 24 * HOUR };
    expect(await saveServerReading(t.db, 's1', 'feedback', oldPlus, readByBoth)).toBe(false);
    expect(await stored()).toMatchObject({ headMs: null, tailMs: null, order: 'newest-first' });
  });

  it('a worker goes on storing over its own', async () => {
    const more: ServerReading = { ...RELEARNED, headMs: 2 * HOUR };
    expect(await saveServerReading(t.db, 's1', 'feedback', more, RELEARNED)).toBe(true);
    expect(await stored()).toMatchObject({ headMs: 2 * HOUR, order: 'newest-first' });
  });

  it('without an expected reading (an in-process run, the only writer under the run lock), it stores', async () => {
    expect(await saveServerReading(t.db, 's1', 'feedback', OLD)).toBe(true);
    expect(await stored()).toMatchObject({ headMs: HOUR, order: 'oldest-first' });
  });
});
