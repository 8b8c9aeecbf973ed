import { describe, expect, it } from 'vitest';
import { newSession, readAgain, takeReopened } from '../../src/extract/reading-session.js';
import type { DayString } from '../../src/time/days.js';
import { rollingFlagsSearch } from './midrun-search.js';

/**
 * A day flagged while the server changed how it answers (a stale verdict, a turn of its maximum
 * limit, the reading learned anew while the day was read) holds answers that say more of the change
 * than of the day: under a steady reading it may read whole. It is read again, once by the run,
 * and recorded reopened for the next run. Before, such a day stayed flagged: the next night reads a
 * truncated day again only where the server has since served more in one answer, or the day filled
 * our limit, on the premise that the server would cut it the same way.
 */
describe('a day flagged while the server changed how it answers', () => {
  it('is read again by the run once: a second flag of it leaves it to the next run', () => {
    const session = newSession();
    const day = '2026-11-03' as DayString;
    readAgain(session, day);
    readAgain(session, day);
    expect(takeReopened(session)).toEqual([day]);
    readAgain(session, day);
    expect(takeReopened(session)).toEqual([]);
  });

  it('is left reopened by a rolling deploy that outlasts the run, and read whole by the night after where the new reading reads it whole', () => {
    const found = rollingFlagsSearch(24, 2026_1206);
    console.info(
      `rolling deploys outlasting the run: ${found.left} days left flagged and reopened that the new reading reads whole, ${found.readWhole} read whole the night after`,
    );
    expect(found.short).toEqual([]);
    // Before, none was left (54 now): the run's flags stood, though the new reading reads those days whole.
    expect(found.left).toBeGreaterThan(20);
    expect(found.readWhole).toBe(found.left);
  }, 120_000);
});
