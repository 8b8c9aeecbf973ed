import { createRequire } from 'node:module';
import type * as Luxon from 'luxon';
import type { IANAZone } from 'luxon';
import type NodeCron from 'node-cron';

/**
 * node-cron and luxon load on the first expression or timezone checked, not with the
 * configuration it is part of: only `schedule` (and `check`) read INSIGHTS_SCHEDULE and
 * INSIGHTS_TIMEZONE, and every other command would pay for them at start-up (luxon alone is a
 * quarter of a megabyte to compile). `require` (their CommonJS builds) because the configuration
 * is read synchronously.
 */
let cron: typeof NodeCron | undefined;
function nodeCron(): typeof NodeCron {
  cron ??= createRequire(import.meta.url)('node-cron') as typeof NodeCron;
  return cron;
}

let luxon: typeof Luxon | undefined;
function zones(): typeof Luxon.IANAZone {
  luxon ??= createRequire(import.meta.url)('luxon') as typeof Luxon;
  return luxon.IANAZone;
}

/** Whether `name` is an IANA timezone this Node knows (UTC, Europe/Berlin). */
export function isTimezone(name: string): boolean {
  return zones().isValidZone(name);
}

/**
 * When a cron expression fires in an IANA timezone, decided once for daylight-saving changes:
 * - a local time that does not exist (the spring-forward gap, e.g. 02:30 in Europe/Berlin on the
 *   last Sunday of March) fires at the first instant after the gap (03:00 local);
 * - a local time that exists twice (the fall-back hour) fires at its first occurrence only.
 * So a nightly expression fires exactly once every night, whatever the night. (node-cron 4's own
 * runner skips the spring-forward night of a time inside the gap; it is used here for what it
 * does well: parsing and validating the expression and matching its day fields.)
 */
export interface CronSchedule {
  readonly expression: string;
  readonly timezone: string;
  /** The first firing instant strictly after `after`. */
  nextAfter(after: Date): Date;
}

/** Far enough for any expression that matches at all (29 February on a given weekday: 28 years). */
const MAX_DAYS_AHEAD = 366 * 30;
const DAY_MS = 86_400_000;

export function cronSchedule(expression: string, timezone: string): CronSchedule {
  const problem = cronProblem(expression, timezone);
  if (problem !== undefined) throw new Error(problem);
  return build(expression, timezone);
}

/** Why an expression or timezone is unusable, or undefined when both are fine. */
export function cronProblem(expression: string, timezone: string): string | undefined {
  if (!isTimezone(timezone)) return `unknown IANA timezone ${JSON.stringify(timezone)}`;
  const detail = nodeCron().validateDetailed(expression);
  if (!detail.valid) {
    const reasons = detail.errors.map((e) => `${e.field}: ${e.message}`).join('; ');
    return `invalid cron expression ${JSON.stringify(expression)}${reasons ? ` (${reasons})` : ''}`;
  }
  try {
    build(expression, timezone).nextAfter(new Date(0));
  } catch {
    return `cron expression ${JSON.stringify(expression)} never fires`;
  }
  return undefined;
}

function build(expression: string, timezone: string): CronSchedule {
  const zone = zones().create(timezone);
  const fields = nodeCron().parse(expression);
  const seconds = sorted(fields.second);
  const minutes = sorted(fields.minute);
  const hours = sorted(fields.hour);
  // node-cron's matcher on a UTC "wall clock" decides whether a local date matches the day,
  // month and weekday fields (including L and # forms) exactly as node-cron reads them.
  const dayMatcher = nodeCron().createTask(expression, () => {}, { timezone: 'UTC' });
  dayMatcher.destroy(); // never started; only match() is used, and destroy() unregisters it
  const matchesDay = (wallDayMs: number) =>
    dayMatcher.match(
      new Date(
        wallDayMs + (hours[0] ?? 0) * 3_600_000 + (minutes[0] ?? 0) * 60_000 + (seconds[0] ?? 0) * 1000,
      ),
    );

  return {
    expression,
    timezone,
    nextAfter(after) {
      const afterMs = after.getTime();
      const offset = zone.offset(afterMs);
      const afterWall = afterMs + offset * 60_000;
      // A local time earlier than `after`'s by more than the offset changes around it happens
      // before `after`: skipped without computing its instant (0 on all but two days a year).
      const around = [zone.offset(afterMs - DAY_MS), offset, zone.offset(afterMs + DAY_MS)];
      const earliestWall = afterWall - (Math.max(...around) - Math.min(...around)) * 60_000;
      // From the local day before `after`: a fall-back at midnight can put yesterday's times after it.
      const firstDay = Math.floor(afterWall / DAY_MS) * DAY_MS - DAY_MS;
      for (let i = 0; i < MAX_DAYS_AHEAD; i++) {
        const wallDay = firstDay + i * DAY_MS;
        if (!matchesDay(wallDay)) continue;
        for (const hour of hours) {
          for (const minute of minutes) {
            for (const second of seconds) {
              const wall = wallDay + hour * 3_600_000 + minute * 60_000 + second * 1000;
              if (wall < earliestWall) continue;
              // Local times map to instants in order (a gap maps onto its end): the first one
              // after `after` is the answer.
              const instant = wallToInstant(zone, wall);
              if (instant > afterMs) return new Date(instant);
            }
          }
        }
      }
      throw new Error(`cron expression ${expression} never fires`);
    },
  };
}

/**
 * The instant a local wall-clock time (given as if it were UTC milliseconds) happens in `zone`:
 * the earliest reading when it happens twice, the end of the gap when it does not happen.
 */
function wallToInstant(zone: IANAZone, wall: number): number {
  // The offsets in force a day either side: a zone changes offset at most once in between.
  const offsets = [...new Set([zone.offset(wall - DAY_MS), zone.offset(wall + DAY_MS)])];
  const readings = offsets
    .map((offset) => wall - offset * 60_000)
    .filter((instant) => zone.offset(instant) * 60_000 === wall - instant);
  if (readings.length > 0) return Math.min(...readings);
  // In the gap: the transition lies between the two candidate instants; find it to the second.
  let low = wall - Math.max(...offsets) * 60_000;
  let high = wall - Math.min(...offsets) * 60_000;
  const before = zone.offset(low);
  while (high - low > 1000) {
    const middle = low + Math.floor((high - low) / 2000) * 1000;
    if (zone.offset(middle) === before) low = middle;
    else high = middle;
  }
  return high;
}

function sorted(values: readonly number[]): number[] {
  return [...values].sort((a, b) => a - b);
}
