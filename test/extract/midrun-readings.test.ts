import { describe, expect, it } from 'vitest';
import { midrunSearch } from './midrun-search.js';

/**
 * SPEC-GAPS, "a reading that changes": servers that change how they read the spec's gaps while
 * the tool reads (a deploy at a random request, a rolling deploy answering both readings for a
 * while) or between a first backfill and a backfill of older days. Every switch kind (each
 * bound, order, cap, zone, instants), on quiet, normal and busy sources. No day may be settled
 * complete but short, and no day above the cap may lose its flag. On the main branch before the
 * reading session, these 60 cases settled 72 days short and lost 29 flags.
 */

describe('servers whose reading changes while the tool reads', () => {
  it('60 seeded cases: no day settled short, no flag lost; the request cost printed', () => {
    const tally = midrunSearch(60, 20261128);
    console.info(
      `reading changes: ${tally.cases} cases, ${tally.days} days, ${tally.short.length} short, ${tally.lostFlags.length} flags lost, ${tally.flagged} flagged, ${tally.reopened} reopened, ${(tally.requests / tally.ideal).toFixed(2)} requests a day`,
    );
    expect(tally.short).toEqual([]);
    expect(tally.lostFlags).toEqual([]);
  }, 120_000);
});
