import type { Volume } from '../../src/simulator/day-plan.js';
import { createRandom, hashSeed, type Random } from '../../src/simulator/random.js';
import type { SimulatorPatch } from '../../src/simulator/server.js';
import { addDays, type DayString } from '../../src/time/days.js';
import type { DeployPlan } from '../helpers/reading-balancer.js';

/**
 * The cases of the queue path's search of servers whose reading changes while a run reads
 * (queue-switch-search.trials.ts): each a reading, the gap a deploy changes in it, when (by count
 * of window requests), whether old and new answer side by side for a stretch, and which path reads.
 */

/** Every gap a deploy can change (SPEC-GAPS), one at a time, or several at once. */
export const SWITCH_KINDS = [
  'startdate',
  'enddate',
  'order',
  'cap',
  'zone',
  'instants',
  'max-limit',
  'several',
] as const;
export type SwitchKind = (typeof SWITCH_KINDS)[number];

/** A reading of every gap the simulator can change while it serves. */
export interface Reading {
  startdate: 'inclusive' | 'exclusive';
  enddate: 'inclusive' | 'exclusive';
  order: 'oldest-first' | 'newest-first' | 'random';
  cap: number;
  maxLimit: number | null;
  dayOffsetMinutes: number;
  instants: 'refused' | 'ignored' | 'honoured';
}

export type RunPath = 'queue' | 'direct';

export interface SwitchCase {
  /** Seeds the simulators' data and the rolling deploy's coin. */
  seed: number;
  kind: SwitchKind;
  before: Reading;
  after: Reading;
  /** Window requests answered by the old reading alone, and the stretch where both answer. */
  plan: DeployPlan;
  path: RunPath;
  from: DayString;
  to: DayString;
  /** Behind a cache keyed on the whole address (reading-balancer.ts, `cache`). */
  cached?: boolean;
  /** Items a day, where not the search's usual volume (about 20 to 190 a resource). */
  volume?: Partial<Volume>;
}

/** A fixed calendar in the past: the data is the same every day the search runs. */
export const TODAY: DayString = '2026-11-20';

const BOUNDS = ['inclusive', 'exclusive'] as const;
const ORDERS = ['oldest-first', 'newest-first', 'random'] as const;
/** 100 cuts the days above it (about one in seven here); 60 cuts most; 1000 none. */
const CAPS = [100, 60, 1000] as const;
/** A maximum limit below the cap (a 400 for any larger limit), above it, or none. */
const MAX_LIMITS = [null, 300, 80] as const;
const ZONES = [0, -300, 330, 120] as const;
const INSTANTS = ['refused', 'ignored', 'honoured'] as const;

function other<T>(rng: Random, values: readonly T[], not: T): T {
  return rng.pick(values.filter((value) => value !== not));
}

/** Fisher-Yates on a copy, with the case's own stream. */
function shuffled<T>(rng: Random, values: readonly T[]): T[] {
  const copy = [...values];
  for (let i = copy.length - 1; i > 0; i--) {
    const j = rng.int(0, i);
    [copy[i], copy[j]] = [copy[j] as T, copy[i] as T];
  }
  return copy;
}

/** The reading a source starts on: mostly a cap of 100 on UTC days, every other gap at random. */
function firstReading(rng: Random): Reading {
  return {
    startdate: rng.pick(BOUNDS),
    enddate: rng.pick(BOUNDS),
    order: rng.pick(ORDERS),
    cap: rng.chance(0.8) ? 100 : rng.pick(CAPS),
    maxLimit: rng.chance(0.7) ? null : rng.pick(MAX_LIMITS),
    dayOffsetMinutes: rng.chance(0.6) ? 0 : rng.pick(ZONES),
    instants: rng.pick(INSTANTS),
  };
}

/** `before` with the gap `kind` names read another way (several: two to four gaps). */
export function changed(rng: Random, before: Reading, kind: SwitchKind): Reading {
  switch (kind) {
    case 'startdate':
      return { ...before, startdate: other(rng, BOUNDS, before.startdate) };
    case 'enddate':
      return { ...before, enddate: other(rng, BOUNDS, before.enddate) };
    case 'order':
      return { ...before, order: other(rng, ORDERS, before.order) };
    case 'cap':
      return { ...before, cap: other(rng, CAPS, before.cap) };
    case 'zone':
      return { ...before, dayOffsetMinutes: other(rng, ZONES, before.dayOffsetMinutes) };
    case 'instants':
      return { ...before, instants: other(rng, INSTANTS, before.instants) };
    case 'max-limit':
      return { ...before, maxLimit: other(rng, MAX_LIMITS, before.maxLimit) };
    case 'several': {
      const single = SWITCH_KINDS.filter((k) => k !== 'several');
      let after = before;
      const count = rng.int(2, 4);
      for (const k of shuffled(rng, single).slice(0, count)) after = changed(rng, after, k);
      return after;
    }
  }
}

/**
 * `count` cases from `seed`: the kinds in turn (every kind once in each 8 cases), every third case
 * on the direct path (each kind on it once in 24 cases), half the cases a rolling deploy of 8 to 50
 * window requests. A run of 8 to 12 days asks about 50 to 250 window requests (proofs, corroborations
 * and slices included): the deploy comes after 2 to 50 of them.
 */
export function switchCases(count: number, seed: number): SwitchCase[] {
  return Array.from({ length: count }, (_, i) => {
    const caseSeed = hashSeed(seed, 'queue switch case', i);
    const rng = createRandom(caseSeed);
    const kind = SWITCH_KINDS[i % SWITCH_KINDS.length] as SwitchKind;
    const before = firstReading(rng);
    const after = changed(rng, before, kind);
    const switchAt = rng.int(2, 50);
    const stretch = rng.chance(0.5) ? rng.int(8, 50) : 0;
    const days = rng.int(8, 12);
    const to = addDays(TODAY, -1 - rng.int(0, 20));
    return {
      seed: caseSeed % 100_000,
      kind,
      before,
      after,
      plan: { switchAt, steadyAt: switchAt + stretch, seed: caseSeed },
      path: i % 3 === 2 ? 'direct' : 'queue',
      from: addDays(to, 1 - days),
      to,
    };
  });
}

/** The simulator settings of a reading. */
export function patchOf(reading: Reading): SimulatorPatch {
  return { ...reading };
}

/** What a reading serves of a day at most in one answer: its cap, or its maximum limit if lower. */
export function servedAtMost(reading: Reading): number {
  return Math.min(reading.cap, reading.maxLimit ?? Number.POSITIVE_INFINITY);
}

/** One line naming the case, enough to play it again alone. */
export function describeCase(c: SwitchCase, index: number): string {
  const diff = (Object.keys(c.after) as (keyof Reading)[])
    .filter((key) => c.before[key] !== c.after[key])
    .map((key) => `${key} ${c.before[key]}->${c.after[key]}`)
    .join(', ');
  const when =
    c.plan.steadyAt === c.plan.switchAt
      ? `at window request ${c.plan.switchAt}`
      : `flapping from request ${c.plan.switchAt} to ${c.plan.steadyAt}`;
  const cache = c.cached === true ? ' behind a cache' : '';
  return `#${index} ${c.kind} (${diff}) ${when}, ${c.path}${cache}, ${c.from}..${c.to}`;
}

/** Busy days: about 50 to 450 items a resource, so that requests of several days exceed 300. */
const BUSY: Partial<Volume> = { feedbackPerDay: 130, surveyPerDay: 110, recordingsPerDay: 90 };

/**
 * `count` rolling deploys of a maximum limit on busy days: one reading refuses any limit above 300,
 * the other takes any, both answering at random from the run's first requests to its end (or
 * nearly), under no cap a day reaches. A limit taken here and refused there, or the other way
 * round, must not keep a day's limit search going (it once failed the window: "did not settle
 * after 32 rounds"); every day settles whole or is flagged. Alternately direct and queued.
 */
export function maximumFlapCases(count: number, seed: number): SwitchCase[] {
  return Array.from({ length: count }, (_, i) => {
    const caseSeed = hashSeed(seed, 'maximum flap case', i);
    const rng = createRandom(caseSeed);
    const base = firstReading(rng);
    const refusing: Reading = { ...base, cap: 1000, maxLimit: 300 };
    const taking: Reading = { ...refusing, maxLimit: null };
    const switchAt = rng.int(0, 6);
    const days = rng.int(6, 10);
    const to = addDays(TODAY, -1 - rng.int(0, 20));
    return {
      seed: caseSeed % 100_000,
      kind: 'max-limit',
      before: i % 4 < 2 ? refusing : taking,
      after: i % 4 < 2 ? taking : refusing,
      plan: { switchAt, steadyAt: switchAt + rng.int(150, 400), seed: caseSeed },
      path: i % 2 === 0 ? 'direct' : 'queue',
      from: addDays(to, 1 - days),
      to,
      volume: BUSY,
    };
  });
}
