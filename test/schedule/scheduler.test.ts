import { DateTime } from 'luxon';
import { describe, expect, it } from 'vitest';
import { startScheduler, type Tick } from '../../src/schedule/scheduler.js';
import { cronSchedule } from '../../src/time/cron-schedule.js';
import { capturingLogger, FakeClock } from '../helpers/fake-clock.js';

const BERLIN = 'Europe/Berlin';

/** Runs the scheduler on a fake clock from `start` to `end`; returns when each run started. */
async function runsBetween(
  expression: string,
  timezone: string,
  start: string,
  end: string,
  job: (clock: FakeClock, tick: Tick) => Promise<void> = async () => {},
  runNow = false,
) {
  const clock = new FakeClock(new Date(start));
  const { logger, lines } = capturingLogger();
  const runs: { at: Date; tick: Tick }[] = [];
  const scheduler = startScheduler({
    schedule: cronSchedule(expression, timezone),
    clock,
    logger,
    runNow,
    run: async (tick) => {
      runs.push({ at: clock.now(), tick });
      await job(clock, tick);
    },
  });
  await clock.advanceTo(new Date(end));
  // A run still in flight ends on the clock too; stopped, the scheduler takes no new slot.
  const stopped = scheduler.stop();
  await clock.advanceTo(new Date(new Date(end).getTime() + 86_400_000));
  await stopped;
  return { runs, lines, clock };
}

const local = (at: Date, timezone: string) => DateTime.fromJSDate(at, { zone: timezone });

/** Local dates of the runs: one entry per run. */
const nights = (runs: { at: Date }[], timezone: string) => runs.map((r) => local(r.at, timezone).toISODate());

describe('the nightly scheduler on a fake clock', () => {
  it('runs 03:00 Europe/Berlin exactly once a night across the spring-forward night', async () => {
    const { runs } = await runsBetween('0 3 * * *', BERLIN, '2026-03-26T12:00:00Z', '2026-04-01T12:00:00Z');
    expect(runs.map((r) => r.at.toISOString())).toEqual([
      '2026-03-27T02:00:00.000Z',
      '2026-03-28T02:00:00.000Z',
      '2026-03-29T01:00:00.000Z', // clocks went 02:00 -> 03:00 an hour earlier: 03:00 CEST
      '2026-03-30T01:00:00.000Z',
      '2026-03-31T01:00:00.000Z',
      '2026-04-01T01:00:00.000Z',
    ]);
    expect(runs.every((r) => local(r.at, BERLIN).toFormat('HH:mm') === '03:00')).toBe(true);
  });

  it('runs 03:00 Europe/Berlin exactly once a night across the fall-back night', async () => {
    const { runs } = await runsBetween('0 3 * * *', BERLIN, '2026-10-22T12:00:00Z', '2026-10-28T12:00:00Z');
    expect(runs.map((r) => r.at.toISOString())).toEqual([
      '2026-10-23T01:00:00.000Z',
      '2026-10-24T01:00:00.000Z',
      '2026-10-25T02:00:00.000Z', // 03:00 CET, after the repeated hour
      '2026-10-26T02:00:00.000Z',
      '2026-10-27T02:00:00.000Z',
      '2026-10-28T02:00:00.000Z',
    ]);
  });

  it('runs a time inside the changing hour (02:30) once on the night it does not exist and once on the night it exists twice', async () => {
    const spring = await runsBetween('30 2 * * *', BERLIN, '2026-03-27T00:00:00Z', '2026-03-31T12:00:00Z');
    expect(spring.runs.map((r) => r.at.toISOString())).toEqual([
      '2026-03-27T01:30:00.000Z',
      '2026-03-28T01:30:00.000Z',
      '2026-03-29T01:00:00.000Z', // 02:30 does not exist: the first instant after the gap, 03:00 CEST
      '2026-03-30T00:30:00.000Z',
      '2026-03-31T00:30:00.000Z',
    ]);
    const fall = await runsBetween('30 2 * * *', BERLIN, '2026-10-23T00:00:00Z', '2026-10-27T12:00:00Z');
    expect(fall.runs.map((r) => r.at.toISOString())).toEqual([
      '2026-10-23T00:30:00.000Z',
      '2026-10-24T00:30:00.000Z',
      '2026-10-25T00:30:00.000Z', // the first 02:30 (CEST); the second one (CET, 01:30Z) does not run
      '2026-10-26T01:30:00.000Z',
      '2026-10-27T01:30:00.000Z',
    ]);
  });

  it('runs once a night for a whole year of nights, whatever the zone does with its clocks', async () => {
    // A run per night whose job takes an hour of fake time; the zones change clocks at 02:00,
    // at midnight (Santiago), by 30 minutes (Lord Howe), or never (Kolkata).
    for (const [expression, timezone] of [
      ['30 2 * * *', BERLIN],
      ['0 0 * * *', 'America/Santiago'],
      ['15 2 * * *', 'Australia/Lord_Howe'],
      ['0 3 * * *', 'Asia/Kolkata'],
    ] as const) {
      const { runs, lines } = await runsBetween(
        expression,
        timezone,
        '2026-01-01T12:00:00Z',
        '2027-01-01T12:00:00Z',
        (clock) => clock.sleep(3_600_000),
      );
      const dates = nights(runs, timezone);
      expect(new Set(dates).size, `${timezone}: a night ran twice`).toBe(dates.length);
      expect(dates.length, timezone).toBeGreaterThanOrEqual(365);
      expect(lines.filter((l) => l.level !== 'info')).toEqual([]);
    }
  });

  it('skips and logs a slot that comes while the previous run is still going', async () => {
    // Hourly slots, runs of 90 minutes: every other slot finds a run in progress.
    const { runs, lines } = await runsBetween(
      '0 * * * *',
      'UTC',
      '2026-05-01T00:30:00Z',
      '2026-05-01T05:30:00Z',
      (clock) => clock.sleep(90 * 60_000),
    );
    expect(runs.map((r) => r.at.toISOString())).toEqual([
      '2026-05-01T01:00:00.000Z',
      '2026-05-01T03:00:00.000Z',
      '2026-05-01T05:00:00.000Z',
    ]);
    const skipped = lines.filter((l) => l.msg === 'tick skipped: the previous run is still in progress');
    expect(skipped.map((l) => [l.slot, l.runningSince])).toEqual([
      ['2026-05-01T02:00:00.000Z', '2026-05-01T01:00:00.000Z'],
      ['2026-05-01T04:00:00.000Z', '2026-05-01T03:00:00.000Z'],
    ]);
  });

  it('with run-now, runs at start and then at each slot', async () => {
    const { runs } = await runsBetween(
      '0 3 * * *',
      'UTC',
      '2026-05-01T10:00:00Z',
      '2026-05-03T10:00:00Z',
      async () => {},
      true,
    );
    expect(runs.map((r) => [r.tick.reason, r.at.toISOString()])).toEqual([
      ['start', '2026-05-01T10:00:00.000Z'],
      ['schedule', '2026-05-02T03:00:00.000Z'],
      ['schedule', '2026-05-03T03:00:00.000Z'],
    ]);
  });

  it('after a suspended machine wakes, runs once for the nights it slept through, then keeps the schedule', async () => {
    const clock = new FakeClock(new Date('2026-05-01T12:00:00Z'));
    const { logger, lines } = capturingLogger();
    const runs: string[] = [];
    const scheduler = startScheduler({
      schedule: cronSchedule('0 3 * * *', 'UTC'),
      clock,
      logger,
      run: async () => {
        runs.push(clock.now().toISOString());
      },
    });
    await clock.advanceTo(new Date('2026-05-01T20:00:00Z'));
    clock.jumpTo(new Date('2026-05-04T09:00:00Z'));
    await clock.advanceTo(new Date('2026-05-05T12:00:00Z'));
    await scheduler.stop();
    expect(runs).toEqual(['2026-05-04T09:00:00.000Z', '2026-05-05T03:00:00.000Z']);
    expect(lines.find((l) => l.missed !== undefined)).toMatchObject({
      slot: '2026-05-02T03:00:00.000Z',
      missed: 2,
    });
  });

  it('stop() takes no new slot and waits for the run in flight', async () => {
    const clock = new FakeClock(new Date('2026-05-01T02:59:00Z'));
    let finished = false;
    const scheduler = startScheduler({
      schedule: cronSchedule('0 3 * * *', 'UTC'),
      clock,
      logger: capturingLogger().logger,
      run: async () => {
        await clock.sleep(60_000);
        finished = true;
      },
    });
    await clock.advanceTo(new Date('2026-05-01T03:00:30Z'));
    const stopped = scheduler.stop();
    expect(scheduler.nextRun()).toBeNull();
    await clock.advanceTo(new Date('2026-05-01T03:01:00Z'));
    await stopped;
    expect(finished).toBe(true);
    expect(clock.pendingTimers()).toBe(0);
  });

  it('logs a run that fails and keeps the schedule', async () => {
    const { runs, lines } = await runsBetween(
      '0 3 * * *',
      'UTC',
      '2026-05-01T00:00:00Z',
      '2026-05-02T12:00:00Z',
      async () => {
        throw new Error('database unavailable');
      },
    );
    expect(runs).toHaveLength(2);
    expect(lines.filter((l) => l.msg === 'scheduled run failed').map((l) => l.err)).toEqual([
      'database unavailable',
      'database unavailable',
    ]);
  });
});
