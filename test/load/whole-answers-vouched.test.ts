import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RESOURCES } from '../../src/schemas/resource-names.js';
import type { WindowedResource } from '../../src/schemas/resources.js';
import { startRun } from '../../src/sync/run-log.js';
import { storeNeighbours } from '../../src/sync/run-window.js';
import { storeWindow } from '../../src/sync/store-window.js';
import type { DayString } from '../../src/time/days.js';
import { createTestDatabase, type TestDatabase } from '../helpers/database.js';
import { windowedItem } from './window-items.js';

/**
 * A day's whole answer that lacks an item the same run stored of the day from another answer (a
 * neighbouring day's, read by another of a queued run's workers) contradicts what the server
 * served minutes before: the reading changed under the run, or the item went meanwhile. The
 * warehouse does not take it as whole (store_window, migration 0053): it marks no row absent,
 * flags the day truncated and reopens it, counting the rows it lacked as the day's, and says how
 * many it lacked. A row stored by an earlier run is not evidence of this run: its absence from a
 * whole answer is a deletion, marked as before.
 */
const DAY = '2026-03-02' as DayString;
const NEXT = '2026-03-03' as DayString;

describe.each<WindowedResource>(['feedback', 'survey', 'recordings'])(
  'a whole answer of a day lacking an item of it the same run stored (%s)',
  (resource) => {
    let t: TestDatabase;
    const source = 'vouched';
    const table = RESOURCES[resource].table;

    const store = (runId: number | null, ids: number[]) => {
      const valid = ids.map((id) => windowedItem(resource, DAY, id));
      return storeWindow(t.pool, {
        sourceId: source,
        baseUrl: 'http://api.example.test',
        resource,
        day: DAY,
        status: 'done',
        valid,
        rejected: [],
        requestedLimit: 1000,
        servedCount: valid.length,
        truncated: false,
        runId,
        startDay: '2026-03-01' as DayString,
        today: '2026-03-10' as DayString,
      });
    };
    /** The next day's window of `runId` served items of DAY: stored as its neighbours. */
    const neighbours = (runId: number, ids: number[]) =>
      storeNeighbours(
        { pool: t.pool },
        { name: source },
        resource,
        { sourceId: source, resource, day: NEXT, runId },
        { valid: ids.map((id) => windowedItem(resource, DAY, id)), rejected: [] },
      );
    const ledger = async () =>
      (
        await sql<{ truncated: boolean; item_count: number; reopened: boolean; status: string }>`
        select truncated, item_count, reopened_at is not null as reopened, status
          from sync_windows where source_id = ${source} and resource = ${resource} and day = ${DAY}`.execute(
          t.db,
        )
      ).rows[0];
    const absent = async () =>
      (
        await sql<{ id: string }>`select id::text as id from ${sql.table(table)}
        where source_id = ${source} and absent_since is not null order by id::text`.execute(t.db)
      ).rows.map((row) => row.id);
    const run = () => startRun(t.db, 'backfill', { from: DAY, to: DAY });
    const id = (n: number) => (resource === 'recordings' ? `rec-${n}` : String(n));

    let second: number;

    beforeAll(async () => {
      t = await createTestDatabase();
      // An earlier run stored the day whole with items 1 to 3.
      expect((await store(await run(), [1, 2, 3])).lacking).toBeUndefined();
    });
    afterAll(() => t.drop());

    it('is not taken as whole: no row marked absent, the day flagged and reopened, counting the rows it lacked', async () => {
      second = await run();
      expect(await neighbours(second, [4])).toBe(1);
      // Item 4, served this run by the next day's answer, is lacked; item 3 (an earlier run's) too.
      const loaded = await store(second, [1, 2]);
      expect(loaded.lacking).toBe(1);
      expect(loaded.missingUpstream).toBe(0);
      expect(await absent()).toEqual([]);
      expect(await ledger()).toEqual({ truncated: true, item_count: 3, reopened: true, status: 'done' });
    });

    it('an answer holding fewer than the flagged count keeps the flag; one holding every item clears it', async () => {
      // Item 4 lacked again: still a contradiction of this run's own neighbour.
      expect((await store(second, [1, 2, 3])).lacking).toBe(1);
      expect(await ledger()).toMatchObject({ truncated: true, reopened: true });
      const whole = await store(second, [1, 2, 3, 4]);
      expect(whole.lacking).toBeUndefined();
      expect(await ledger()).toEqual({ truncated: false, item_count: 4, reopened: false, status: 'done' });
    });

    it('a row no answer of this run served is a deletion: marked absent, the day settled whole', async () => {
      const third = await run();
      const loaded = await store(third, [1, 2, 4]);
      expect(loaded.lacking).toBeUndefined();
      expect(await absent()).toEqual([id(3)]);
      expect(await ledger()).toEqual({ truncated: false, item_count: 3, reopened: false, status: 'done' });
    });

    // Webhooks deliver feedback and survey answers, not recordings (whose table has no origin).
    if (resource !== 'recordings')
      it("a row only a webhook delivered is not the API's evidence: the answer lacking it is whole", async () => {
        const fourth = await run();
        await neighbours(fourth, [5]);
        await sql`update ${sql.table(table)} set origin = 'webhook'
                 where source_id = ${source} and id::text = ${id(5)}`.execute(t.db);
        expect((await store(fourth, [1, 2, 4])).lacking).toBeUndefined();
        expect(await absent()).toEqual([id(3), id(5)]);
      });

    it('without a run (a load outside the sync) nothing is checked', async () => {
      expect((await store(null, [1])).lacking).toBeUndefined();
    });
  },
);
