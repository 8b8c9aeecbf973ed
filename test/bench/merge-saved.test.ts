import { describe, expect, it } from 'vitest';
import type { Machine } from '../../bench/machine.js';
import { renderDoc } from '../../bench/report.js';
import { mergeSaved, type SavedRun } from '../../bench/saved.js';
import { BENCHMARK_NAMES, FULL, figuresOf } from '../../bench/suite.js';

const machine: Machine = {
  cores: 2,
  cpu: 'test cpu',
  memoryGb: 8,
  node: 'v24',
  postgres: 'PostgreSQL 15',
  postgresSettings: 'defaults',
  databaseKind: 'TEST_DATABASE_URL',
};

function run(only: SavedRun['only'], command: string, date: string, value: number): SavedRun {
  return {
    result: {
      values: Object.fromEntries(only.map((name) => [name, { quietBackfillPerDay: [value] }])),
      failures: [],
      loads: [],
      loadsDuring: [],
      seconds: 60,
    },
    machine,
    date,
    command,
    startLoad: 0.1,
    runs: only.length === BENCHMARK_NAMES.length ? 3 : 1,
    only,
  };
}

describe('a benchmark measured again, merged into the saved values of a full run', () => {
  const full = run(
    BENCHMARK_NAMES.filter((name) => name !== 'reading-proofs'),
    'npm run bench',
    '2026-11-26T15:19:00.000Z',
    1,
  );
  const again = run(
    ['reading-proofs'],
    'npm run bench -- --only reading-proofs --runs 1',
    '2026-11-28T22:30:00.000Z',
    7,
  );
  const merged = mergeSaved(full, again);

  it('takes the new values for what it measured and keeps the rest, in the suite order', () => {
    expect(merged.only).toEqual([...BENCHMARK_NAMES]);
    expect(merged.result.values['reading-proofs']).toEqual({ quietBackfillPerDay: [7] });
    expect(merged.result.values.load).toEqual({ quietBackfillPerDay: [1] });
    expect(merged.command).toBe('npm run bench');
    expect(merged.date).toBe(full.date);
  });

  it("says under the merged section which command measured it, and when; the full run's sections say nothing more", () => {
    const doc = renderDoc({
      ...merged,
      date: new Date(merged.date),
      result: { ...merged.result, figures: figuresOf(FULL, merged.only, merged.result.values) },
    });
    const section = doc.slice(doc.indexOf('## Reading proofs'));
    expect(section).toContain(
      'Measured apart from the rest: `npm run bench -- --only reading-proofs --runs 1`, 2026-11-28 22:30 UTC, 1 run(s), load average 0.10 at its start',
    );
    expect(doc.match(/Measured apart from the rest/g)).toHaveLength(1);
    expect(doc).toContain('- **Command**: `npm run bench`');
  });

  it("replaces the failures of what it measured again, and keeps the others'", () => {
    const failing = (base: SavedRun, failures: string[]): SavedRun => ({
      ...base,
      result: { ...base.result, failures },
    });
    const before = failing(full, [
      'run 1: busy site: feedback 2026-11-29 (0 items, cap 10000): truncated true',
      'run 2: load: first load inserted 9 of 10 rows',
    ]);
    const busyAgain = failing(run(['busy-site'], 'npm run bench -- --only busy-site', again.date, 7), [
      'run 1: busy site: feedback 2026-11-28 (5677 items, cap 10000): truncated true',
    ]);
    expect(mergeSaved(before, busyAgain).result.failures).toEqual([
      'run 2: load: first load inserted 9 of 10 rows',
      'run 1: busy site: feedback 2026-11-28 (5677 items, cap 10000): truncated true',
    ]);
    expect(mergeSaved(before, failing(busyAgain, [])).result.failures).toEqual([
      'run 2: load: first load inserted 9 of 10 rows',
    ]);
  });
});
