/**
 * SPEC-GAPS, "a reading that changes", between runs: a server capped at 100 whose days hold about
 * 20 to 100 items is backfilled over 16 days; restarted on the same data with an exclusive end
 * bound, it is asked for the 25 days before. Every item it serves must be stored, or its day
 * flagged; and the run must say the reading changed.
 */
import { describe, expect, it } from 'vitest';
import { WINDOWED_RESOURCES } from '../../src/schemas/resources.js';
import { captureLogger } from '../api/fixture-server.js';
import { compareWithTruth } from '../helpers/completeness-oracle.js';
import {
  backfillAcrossReadingChange,
  OLDER_FROM,
  OLDER_TO,
  useReadingChangeScene,
} from '../helpers/reading-change.js';

describe('a capped server restarted with an exclusive end bound before a backfill of older days', () => {
  const scene = useReadingChangeScene();

  it('stores every item of the older days, or flags the day; and says the reading changed', async () => {
    const { logger, lines } = captureLogger();
    const { recent, older } = await backfillAcrossReadingChange(scene, { olderLogger: logger });
    expect(recent.status).toBe('ok');
    expect(older.status).toBe('ok');
    const { t, sim } = scene;
    const found = await compareWithTruth(t, 'main', sim.truth(), { from: OLDER_FROM, to: OLDER_TO });
    for (const resource of WINDOWED_RESOURCES) {
      expect(found[resource].missedFlags, `${resource}: days short but settled complete`).toEqual([]);
      expect(found[resource].stored, resource).toBeGreaterThan(0);
    }
    const said = lines.map((line) => JSON.parse(line) as { msg: string; resource?: string });
    const changed = new Set(
      said.filter((line) => line.msg === 'server reading changed').map((l) => l.resource),
    );
    expect([...changed].sort()).toEqual([...WINDOWED_RESOURCES].sort());
  });
});
