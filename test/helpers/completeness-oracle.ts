import { canonicalJson } from '../../src/db/canonical-json.js';
import { WINDOWED_RESOURCES, type WindowedResource } from '../../src/schemas/resources.js';
import type { GroundTruth } from '../../src/simulator/server.js';
import type { TestDatabase } from './database.js';

/** How one resource of one source compares with the simulator's ground truth. */
export interface Completeness {
  /** Items the truth holds in the range. */
  expected: number;
  /** ... of which the warehouse holds (in its table or, for a collided key, in key_collisions). */
  stored: number;
  /** Warehouse versions the truth does not hold (should be 0: nothing invented, nothing stale). */
  extra: number;
  /** Keys whose table row is not the version with the latest dt (the documented rule). */
  misplaced: number;
  /** Days holding a truth item the warehouse lacks. */
  trulyTruncated: string[];
  /** Days the ledger flags truncated. */
  flagged: string[];
  /** Truly truncated days not flagged: silent loss. Must be empty. */
  missedFlags: string[];
  /** Flagged days that are in fact whole. Counted, kept near 0. */
  falseAlarms: string[];
}

const TABLES = { feedback: 'feedback', survey: 'survey_answers', recordings: 'recordings' } as const;

function keyOf(resource: WindowedResource, item: Record<string, unknown>): string {
  if (resource === 'feedback') return `${item.id}/${item.feedback_id}`;
  if (resource === 'survey') return `${item.id}/${item.question_id}`;
  return String(item.id);
}

const dayOf = (item: { dt: string }) => item.dt.slice(0, 10);

/** Compares the warehouse of one source with the truth, for items whose UTC day is in the range. */
export async function compareWithTruth(
  t: TestDatabase,
  source: string,
  truth: GroundTruth,
  range: { from: string; to: string },
): Promise<Record<WindowedResource, Completeness>> {
  const inRange = (day: string) => day >= range.from && day <= range.to;
  const result = {} as Record<WindowedResource, Completeness>;
  for (const resource of WINDOWED_RESOURCES) {
    const truthItems = (truth[resource] as unknown as Array<Record<string, unknown> & { dt: string }>).filter(
      (item) => inRange(dayOf(item)),
    );
    const rows = await t.db
      .selectFrom(TABLES[resource])
      .select(['raw'])
      .where('source_id', '=', source)
      .execute();
    const collided = await t.db
      .selectFrom('key_collisions')
      .select(['raw'])
      .where('source_id', '=', source)
      .where('resource', '=', resource)
      .execute();
    const tableVersions = rows.map((r) => r.raw as Record<string, unknown> & { dt: string });
    const stored = new Set(
      [...tableVersions, ...collided.map((r) => r.raw as Record<string, unknown> & { dt: string })]
        .filter((item) => inRange(dayOf(item)))
        .map((item) => canonicalJson(item)),
    );
    const truthSet = new Set(truthItems.map((item) => canonicalJson(item)));

    const truncated = new Set<string>();
    let storedCount = 0;
    for (const item of truthItems) {
      if (stored.has(canonicalJson(item))) storedCount += 1;
      else truncated.add(dayOf(item));
    }
    const extra = [...stored].filter((json) => !truthSet.has(json)).length;

    // The table holds, per key, the stored version with the latest dt.
    const latest = new Map<string, string>();
    for (const item of truthItems) {
      if (!stored.has(canonicalJson(item))) continue;
      const key = keyOf(resource, item);
      const known = latest.get(key);
      if (known === undefined || item.dt > known) latest.set(key, item.dt);
    }
    const misplaced = tableVersions.filter(
      (row) => inRange(dayOf(row)) && latest.get(keyOf(resource, row)) !== row.dt,
    ).length;

    const windows = await t.db
      .selectFrom('sync_windows')
      .select('day')
      .where('source_id', '=', source)
      .where('resource', '=', resource)
      .where('truncated', '=', true)
      .execute();
    const flagged = windows
      .map((w) => w.day)
      .filter(inRange)
      .sort();
    const trulyTruncated = [...truncated].sort();
    result[resource] = {
      expected: truthItems.length,
      stored: storedCount,
      extra,
      misplaced,
      trulyTruncated,
      flagged,
      missedFlags: trulyTruncated.filter((day) => !flagged.includes(day)),
      falseAlarms: flagged.filter((day) => !truncated.has(day)),
    };
  }
  return result;
}

/** Days the ledger holds reopened (a proof found the reading they were settled under stale). */
export function reopenedDays(t: TestDatabase): Promise<{ resource: string; day: string }[]> {
  return t.db
    .selectFrom('sync_windows')
    .select(['resource', 'day'])
    .where('reopened_at', 'is not', null)
    .execute();
}
