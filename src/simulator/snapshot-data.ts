import type { Heatmap } from '../schemas/heatmap.js';
import type { Test, TestKind, TestResult } from '../schemas/test.js';
import { DAY_MS, dayStartMs, isoAt } from '../time/days.js';
import { createRandom, hashSeed, hexHash } from './random.js';
import {
  HEATMAP_LIMITS,
  HEATMAP_RULES,
  PAGES,
  PERSONALIZATION_NAMES,
  SITE,
  TEST_NAMES,
} from './vocabulary.js';

/** How many of each snapshot resource a dataset has. */
const TEST_COUNTS: Record<TestKind, number> = { abtesting: 4, personalization: 3 };
const HEATMAP_COUNT = 6;

/** The resources read whole on every run; small, so they are kept materialised and mutable. */
export interface SnapshotData {
  tests: Record<TestKind, Test[]>;
  /** Results by test id; a control variant first, then 'variant 1', 'variant 2', ... */
  results: Record<TestKind, Map<string, TestResult[]>>;
  heatmaps: Heatmap[];
}

const ID_PREFIX: Record<TestKind, string> = { abtesting: 'ab', personalization: 'wp' };

export function generateSnapshots(seed: number, from: string, to: string): SnapshotData {
  const data: SnapshotData = {
    tests: { abtesting: [], personalization: [] },
    results: { abtesting: new Map(), personalization: new Map() },
    heatmaps: [],
  };
  for (const kind of ['abtesting', 'personalization'] as const) {
    const names = kind === 'abtesting' ? TEST_NAMES : PERSONALIZATION_NAMES;
    for (let i = 0; i < TEST_COUNTS[kind]; i++) {
      const rng = createRandom(hashSeed(seed, kind, i));
      const test: Test = {
        id: `${ID_PREFIX[kind]}-${hexHash(seed, kind, 'id', i).slice(0, 6)}-${i + 1}`,
        test_name: names[i % names.length] as string,
        url: `${SITE}${rng.pick(PAGES)}`,
        goal_profile_id: `gp-${rng.int(100, 999)}`,
        ...createdAndUpdated(rng, from, to),
      };
      data.tests[kind].push(test);
      data.results[kind].set(test.id, generateResults(rng));
    }
  }
  for (let i = 0; i < HEATMAP_COUNT; i++) data.heatmaps.push(generateHeatmap(seed, from, to, i));
  return data;
}

function createdAndUpdated(
  rng: ReturnType<typeof createRandom>,
  from: string,
  to: string,
): { created_at: string; updated_at: string } {
  const createdMs = dayStartMs(from) - rng.int(1, 120) * DAY_MS + rng.int(0, DAY_MS - 1);
  const updatedMs = rng.int(dayStartMs(from), dayStartMs(to) + DAY_MS - 1);
  return { created_at: isoAt(createdMs), updated_at: isoAt(updatedMs) };
}

function generateResults(rng: ReturnType<typeof createRandom>): TestResult[] {
  const variants = ['control'];
  const numbered = rng.int(1, 3);
  for (let v = 1; v <= numbered; v++) variants.push(`variant ${v}`);
  return variants.map((variant) => {
    const total = rng.int(200, 5000);
    return { variant, complete: rng.int(0, Math.floor(total * 0.3)), total };
  });
}

function generateHeatmap(seed: number, from: string, to: string, index: number): Heatmap {
  const rng = createRandom(hashSeed(seed, 'heatmap', index));
  const { created_at, updated_at } = createdAndUpdated(rng, from, to);
  const startMs = Date.parse(created_at) + rng.int(0, 3) * DAY_MS;
  const page = PAGES[index % PAGES.length] as string;
  return {
    id: `hm-${hexHash(seed, 'heatmap-id', index).slice(0, 8)}`,
    name: `Heatmap of ${page}`,
    url: `${SITE}${page}`,
    rule: rng.pick(HEATMAP_RULES),
    start_time: isoAt(startMs),
    // Every other heatmap has no end set, which the service reports as null.
    end_time: index % 2 === 0 ? null : isoAt(startMs + rng.int(7, 60) * DAY_MS),
    heatmap_limit: rng.pick(HEATMAP_LIMITS),
    created_at,
    updated_at,
  };
}
