import { describe, expect, it } from 'vitest';
import { STEADY_CAPPED } from '../helpers/sim-readings.js';
import { emptyTally, playMidrun, SIZES } from './midrun-search.js';

/**
 * A busy source (150-400 items a day, a cap of 100, instants honoured) has no day small enough to
 * serve as a canary, so no proof can be made; its end bound turns exclusive mid-backfill and every
 * narrow request comes back empty. Each empty day must be checked on its own (the widest request,
 * then the day asked with instants): before, 53 of 200 such days (10 seeds of each kind) were settled complete and empty.
 */

const BEFORE = { ...STEADY_CAPPED, instants: 'honoured' } as const;

describe('a busy source whose end bound turns exclusive mid-backfill', () => {
  for (const kind of ['mid-run', 'flapping'] as const)
    it(`${kind}: no day settled short over 5 seeds`, () => {
      const tally = emptyTally();
      for (let seed = 1; seed <= 5; seed++)
        playMidrun(
          seed,
          { kind, before: BEFORE, after: { ...BEFORE, enddate: 'exclusive' }, sizes: SIZES.busy, at: 0.4 },
          tally,
        );
      expect(tally.short).toEqual([]);
      expect(tally.lostFlags).toEqual([]);
    });
});
