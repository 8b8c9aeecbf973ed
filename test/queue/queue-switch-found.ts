import type { Reading, SwitchCase } from './queue-switch-cases.js';

/**
 * Cases the queue path's search found settling days short (queue-switch-search.trials.ts, two wide
 * runs of 40 cases on seed 20261129), kept as data so each plays again whatever the generator
 * becomes: `INSIGHTS_TRIAL_FOUND=1` plays them all instead of the generated cases. The requests of
 * a run interleave differently each time, and each note says how often the case failed.
 *
 * The first seven are fixed (`fixed`). The cap cases (the first four) failed the same two ways. A deploy lowers the cap from
 * 100 to 60; the days the new deploy answers with exactly 60 items were settled whole:
 *  - a resource that proved the new cap later in the run kept the days it settled at 60 before
 *    (its reading then held the old cap 100 as proved, and 60 is below it); or another window
 *    proved 60 while the day's reading check was out, and the day counted as read knowing it;
 *  - on the queue path, a worker knew only the caps it proved itself, and the days it settled
 *    before another proved 60 were in no session any more.
 * Fixed (migration 0050): workers tell and hear the run's caps, a day read with no cap known at
 * its size records that size in the ledger, and the planner's last proof reads again the days at
 * a cap any worker proved; the size a day records is that of the answer it was settled on,
 * judged below every cap known then. Each played 4 times since: 0 days short. The queue ones play
 * in the default set.
 *
 * The zone cases (the last two) failed about one run in three: a worker's reading mixed the old
 * zone's start with the new zone's end (its evidence said the server's day ran from 00:01 to 27:53
 * of a request's days), and a day whose first hours the new zone files under the capped day
 * before was settled without them; the direct path flagged those days (5 runs of 5). Fixed: such
 * evidence, a day or more from head to tail, holds two readings, and the reading is learned anew
 * (server-reading.ts, mixedReadings). Case 5 played 5 times since, all found cases twice: 0 days
 * short. In the default set too.
 */

/**
 * The cases after them came from an attack on the queue path: an exclusive start (which the rule
 * for two readings cannot use), the server's day moved 2 to 10 h earlier by a rolling deploy, 12
 * cases played 4 times (seeds 50000 + 7919 i), 1 to 2 days short in each run of the 12, each a
 * different way; see each note. The first three are fixed; the next two by the queued run's last
 * proof taking the run's largest settled day as its canary where no proof had found a day whole
 * (and an answer holding an item of an unproved canary's day it lacks as stale). That change first
 * lost flags in the default set (case 3: a cap raised from 60 to 100 between a cut day's request
 * and its half, the half taken as whole at 100 of 158); it landed once a half at a raised cap
 * counted as cut. The next two, from the same attack on other seeds (60000, 62000; the direct
 * path too), failed about one run in six, on a day whose own answer shows nothing of the move
 * (the hours beside it empty), where only a proof can tell and one answered by the old deploy
 * during the rolling stretch vouched. The direct one is fixed: a day settled under a request the
 * reading, as it learned since, says misses part of it is read again (reading-session.ts,
 * reopenUncovered), which read its short day again in every play since. The queue one is not.
 *
 * The last one is the default set's case 13 (seed 20261129), which failed once in 22 plays (the
 * other 21, 14 of them alone at debug level, passed) under a change since reverted that probed a
 * cut request for instants before its halves were asked: the probe moved which requests the
 * rolling stretch answered. It is the class of the case before it, on the queue path: the day
 * beside a capped one, its first hours filed by the new zone under the capped day, settled from
 * its own two halves.
 */

/** A capped UTC server with an exclusive start, oldest first, instants ignored. */
const OLDEST_FIRST: Reading = {
  startdate: 'exclusive',
  enddate: 'inclusive',
  order: 'oldest-first',
  cap: 100,
  maxLimit: null,
  dayOffsetMinutes: 0,
  instants: 'ignored',
};
const SHUFFLED: Reading = {
  startdate: 'inclusive',
  enddate: 'exclusive',
  order: 'random',
  cap: 100,
  maxLimit: null,
  dayOffsetMinutes: 0,
  instants: 'refused',
};

export const FOUND_CASES: { note: string; c: SwitchCase; fixed?: true }[] = [
  {
    // Failed 6 runs of 8: recordings 10-27 (60 of 107), 10-30 (60 of 104), 10-31 (60 of 80) settled whole.
    // Recordings' answers under the old deploy never reached 100 (largest 97, no cap seen); the
    // same wide request (10-22..10-26) answered 97, then 60 under the new one; every later day
    // answered exactly 60 and was settled below a cap the reading never proved. Feedback and
    // survey proved the cap of 60 in the same run and flagged their days.
    note: 'cap lowered, rolling, direct: recordings whole at exactly the new cap',
    fixed: true,
    c: {
      seed: 24961,
      kind: 'cap',
      before: SHUFFLED,
      after: { ...SHUFFLED, cap: 60 },
      plan: { switchAt: 12, steadyAt: 22, seed: 4168024961 },
      path: 'direct',
      from: '2026-10-24',
      to: '2026-11-04',
    },
  },
  {
    // Failed 3 runs of 3: recordings 11-09 (60 of 87), 11-10 (60 of 117), the reading ending on the
    // cap of 100 the old deploy proved (feedback and survey proved 60); in one run survey 11-10
    // (60 of 128) too, settled at 60 before survey proved the cap of 60.
    note: 'cap lowered, rolling, direct: days whole at exactly the new cap, under the old one proved',
    fixed: true,
    c: {
      seed: 8695,
      kind: 'cap',
      before: OLDEST_FIRST,
      after: { ...OLDEST_FIRST, cap: 60 },
      plan: { switchAt: 57, steadyAt: 74, seed: 66008695 },
      path: 'direct',
      from: '2026-11-03',
      to: '2026-11-14',
    },
  },
  {
    // Failed 3 runs of 3: feedback 11-03 (60 of 106), 11-04 (60 of 64), 11-06 (60 of 152), 11-08
    // (60 of 65), survey 11-09 (60 of 120), the feedback reading ending with no cap and a largest
    // answer of 100; then recordings 11-09 (60 of 87), its reading on the cap of 100; then
    // feedback 11-06, 11-08 and 11-09 (60 of 165).
    note: 'cap lowered, rolling, queue: the same server read by two workers',
    fixed: true,
    c: {
      seed: 8695,
      kind: 'cap',
      before: OLDEST_FIRST,
      after: { ...OLDEST_FIRST, cap: 60 },
      plan: { switchAt: 41, steadyAt: 58, seed: 66008695 },
      path: 'queue',
      from: '2026-11-03',
      to: '2026-11-14',
    },
  },
  {
    // Failed 3 runs of 3: feedback 10-27 (60 of 72), a plain deploy at window request 45 (feedback
    // 10-24, 60 of 79, in the third run instead). The day's request (10-26, 10-27] went to the new
    // deploy (request 48) and answered 60 while the feedback reading held the cap of 100 proved;
    // it proved 60 later in the run (its reading ends on cap 60, largest answer 100) and did not
    // read the day again.
    note: 'cap lowered at one request, queue: a day whole at exactly the new cap',
    fixed: true,
    c: {
      seed: 8356,
      kind: 'cap',
      before: OLDEST_FIRST,
      after: { ...OLDEST_FIRST, cap: 60 },
      plan: { switchAt: 45, steadyAt: 45, seed: 1142208356 },
      path: 'queue',
      from: '2026-10-24',
      to: '2026-11-02',
    },
  },
  {
    // Failed 1 run of 6: feedback 10-29 (33 of 46), after the busy 10-28 (212), settled whole. Under
    // UTC-5 the day's items before 05:00Z belong to server day 10-28, whose answers stop at the cap
    // of 100 (oldest first) inside 10-28 and never serve them; the request for server day 10-29
    // (request 74, new deploy) answered 44: the day's 33 items after 05:00Z and 11 of 10-30.
    note: 'day zone moved to UTC-5, rolling, queue: a day beside a capped one settled short',
    fixed: true,
    c: {
      seed: 89095,
      kind: 'zone',
      before: OLDEST_FIRST,
      after: { ...OLDEST_FIRST, dayOffsetMinutes: -300 },
      plan: { switchAt: 52, steadyAt: 72, seed: 2006089095 },
      path: 'queue',
      from: '2026-10-27',
      to: '2026-11-03',
    },
  },
  {
    // Failed 1 run of 6: feedback 10-26 (29 of 36) and 10-29 (29 of 32) settled whole, each after a
    // day above the cap of 60 (10-25: 87, 10-28: 153): as above, the day's first five hours belong
    // to the capped server day before it.
    note: 'day zone moved to UTC-5, rolling, queue, cap 60: days beside capped ones settled short',
    fixed: true,
    c: {
      seed: 15355,
      kind: 'zone',
      before: { ...OLDEST_FIRST, startdate: 'inclusive', cap: 60 },
      after: { ...OLDEST_FIRST, startdate: 'inclusive', cap: 60, dayOffsetMinutes: -300 },
      plan: { switchAt: 44, steadyAt: 59, seed: 75915355 },
      path: 'queue',
      from: '2026-10-25',
      to: '2026-11-03',
    },
  },
  {
    // Failed 2 runs of 5: recordings 11-02 (26 of 29), feedback 11-04 (40 of 49). The day's request
    // (D-1, D] went to the new deploy, whose day ends 5.5 h before UTC's: its answer held the
    // evening before, which moved the start 5.5 h earlier, and lacked the day's evening, which no
    // item can show. The end was moved as far only where 10 items had held to the start within an
    // hour of it; about 9 had. Fixed: counted within as many hours as it moved by, up to two.
    note: 'day zone moved to UTC+5:30, rolling, queue, exclusive start: the end moved only in the evidence',
    fixed: true,
    c: {
      seed: 113352,
      kind: 'zone',
      before: { ...OLDEST_FIRST, order: 'random' },
      after: { ...OLDEST_FIRST, order: 'random', dayOffsetMinutes: 330 },
      plan: { switchAt: 26, steadyAt: 60, seed: 900008 },
      path: 'queue',
      from: '2026-10-28',
      to: '2026-11-08',
    },
  },
  {
    // Failed 2 runs of 9: feedback 10-28 (21 of 31), recordings 10-28 (17 of 25), the run's oldest
    // day, read last under the new deploy (UTC+10): its answer ends at 14:00, the day before it is
    // empty, so nothing in it shows the move. No worker settled a stretch, so no day was proved and
    // the planner's last proof had no canary. Fixed: the run's largest settled day serves as one,
    // which can prove the reading stale but not vouch for it; a canary whose answer may be cut
    // gives way to the next.
    note: 'day zone moved to UTC+10, rolling, queue: the last day read short, no proved day to prove it by',
    fixed: true,
    c: {
      seed: 65838,
      kind: 'zone',
      before: { ...OLDEST_FIRST, order: 'random' },
      after: { ...OLDEST_FIRST, order: 'random', dayOffsetMinutes: 600 },
      plan: { switchAt: 44, steadyAt: 80, seed: 900002 },
      path: 'queue',
      from: '2026-10-28',
      to: '2026-11-08',
    },
  },
  {
    // Failed 1 run of 4: survey 11-01 (59 of 64), settled on the new deploy's answer (UTC+5:30)
    // under the old reading. The planner's proof took that very day as its canary (no day was
    // proved): asked again it came back with all 64, every item the canary held among them, and
    // the proof held. Fixed: an answer holding an item of an unproved canary's day that it lacks
    // proves the reading stale. Failed once more in a CI run (default set's case 18), another
    // way: recordings 11-01 (29 of 41), its request answered by the new deploy and the next day's
    // by the old; feedback and survey were found stale, recordings never (its canary came from
    // the new deploy). Since, a verdict is heard by every resource of the source (reading-store.ts,
    // exchangeVerdicts).
    note: 'day zone moved to UTC+5:30, rolling, queue: the canary was the short day',
    fixed: true,
    c: {
      seed: 81676,
      kind: 'zone',
      before: { ...OLDEST_FIRST, order: 'newest-first' },
      after: { ...OLDEST_FIRST, order: 'newest-first', dayOffsetMinutes: 330 },
      plan: { switchAt: 38, steadyAt: 60, seed: 900004 },
      path: 'queue',
      from: '2026-10-28',
      to: '2026-11-08',
    },
  },
  {
    // Not fixed: failed 2 runs of 9: survey 11-02 (32 of 39). Its request (11-01, 11-02] went to
    // the new deploy (UTC+5:30) and held nothing of 11-01 (its evening was empty): an answer of
    // the old reading's shape, 5.5 h short. The stale verdicts that came later did not reopen it
    // (a proof had proved it). Reopening the days the last passed proof proved on a stale verdict
    // passed 8 plays of it, but left days reopened at the end of a queued run (queue-last-stretch):
    // not kept.
    note: 'day zone moved to UTC+5:30, rolling, queue: a day whose answer showed nothing of the move',
    c: {
      seed: 91676,
      kind: 'zone',
      before: { ...OLDEST_FIRST, order: 'newest-first' },
      after: { ...OLDEST_FIRST, order: 'newest-first', dayOffsetMinutes: 330 },
      plan: { switchAt: 38, steadyAt: 60, seed: 700004 },
      path: 'queue',
      from: '2026-10-28',
      to: '2026-11-08',
    },
  },
  {
    // Failed 1 run of 7 (on c1d6ce7 0 of 6; 1 of 3 again later): recordings 11-04 (17 of 22). The
    // server's day moved 5 h later (UTC-5); the day's request went to the new deploy and lacked
    // its first 5 h, which the capped server day before it holds; nothing in the answer showed the
    // move. Fixed: the reading the later answers taught says its request 11-04..11-05 misses the
    // day's first hours, and the day is read again (reopenUncovered did so in every play): 0 runs
    // of 22 failed since.
    note: 'day zone moved to UTC-5, rolling, direct, cap 60: a day beside a capped one, the move unseen',
    fixed: true,
    c: {
      seed: 85757,
      kind: 'zone',
      before: { ...OLDEST_FIRST, startdate: 'inclusive', enddate: 'exclusive', cap: 60 },
      after: {
        ...OLDEST_FIRST,
        startdate: 'inclusive',
        enddate: 'exclusive',
        cap: 60,
        dayOffsetMinutes: -300,
      },
      plan: { switchAt: 21, steadyAt: 70, seed: 700003 },
      path: 'direct',
      from: '2026-10-28',
      to: '2026-11-08',
    },
  },
  {
    // Not fixed: failed 1 run of 22: feedback 10-26 (29 of 36) settled whole from 10-26..10-26
    // (43) and 10-27..10-27 (59), the halves of a cut 10-26..10-27; its 7 items before 05:00 UTC
    // lie in the new zone's 10-25, capped at 60. reopenUncovered never fired in it.
    note: 'day zone moved to UTC-5, rolling, queue, cap 60: a day beside a capped one, the move unseen',
    c: {
      seed: 15355,
      kind: 'zone',
      before: {
        startdate: 'inclusive',
        enddate: 'inclusive',
        order: 'oldest-first',
        cap: 60,
        maxLimit: null,
        dayOffsetMinutes: 0,
        instants: 'ignored',
      },
      after: {
        startdate: 'inclusive',
        enddate: 'inclusive',
        order: 'oldest-first',
        cap: 60,
        maxLimit: null,
        dayOffsetMinutes: -300,
        instants: 'ignored',
      },
      plan: { switchAt: 44, steadyAt: 59, seed: 75915355 },
      path: 'queue',
      from: '2026-10-25',
      to: '2026-11-03',
    },
  },
  {
    // Failed 1 run of 6 (seed 20261202 case 28): feedback 11-07 (26 of 34). A worker's reading
    // held the old deploy's UTC end when the new deploy (UTC+5:30) answered (11-06, 11-07] with the
    // day up to 18:30; learned again later from the new deploy, the reading said that request
    // missed the day's last 5.5 hours, but no one judged the day by it. Fixed: the ledger records
    // the request a day was settled on, and where a worker found the reading stale the planner's
    // last proof reads again every day of the run that request does not hold (migration 0051).
    note: 'day zone moved to UTC+5:30, rolling, queue, newest first, cap 100: a day settled on the old end',
    fixed: true,
    c: {
      seed: 20528,
      kind: 'zone',
      before: {
        startdate: 'exclusive',
        enddate: 'inclusive',
        order: 'newest-first',
        cap: 100,
        maxLimit: null,
        dayOffsetMinutes: 0,
        instants: 'refused',
      },
      after: {
        startdate: 'exclusive',
        enddate: 'inclusive',
        order: 'newest-first',
        cap: 100,
        maxLimit: null,
        dayOffsetMinutes: 330,
        instants: 'refused',
      },
      plan: { switchAt: 13, steadyAt: 54, seed: 1923820528 },
      path: 'queue',
      from: '2026-11-02',
      to: '2026-11-10',
    },
  },
  {
    // Failed 3 runs of 4 (seed 31337 case 32), direct: survey 10-29 (100 of 109, cap 100, a flag
    // lost). Another window found the reading stale while the busy day's halves were out; the
    // reading learned afresh took a one-day half answered empty (both bounds exclusive now) for
    // one that holds none of the day. Fixed: halves that outlive their reading prove nothing, and
    // the day is flagged (day-plan.ts, split). Played 4 times since: 0 short, 6 days flagged.
    note: 'startdate turned exclusive at request 16, direct, cap 100: a cut day settled on halves of the old reading',
    fixed: true,
    c: {
      seed: 51309,
      kind: 'startdate',
      before: {
        startdate: 'inclusive',
        enddate: 'exclusive',
        order: 'oldest-first',
        cap: 100,
        maxLimit: null,
        dayOffsetMinutes: 0,
        instants: 'refused',
      },
      after: {
        startdate: 'exclusive',
        enddate: 'exclusive',
        order: 'oldest-first',
        cap: 100,
        maxLimit: null,
        dayOffsetMinutes: 0,
        instants: 'refused',
      },
      plan: { switchAt: 16, steadyAt: 16, seed: 1908451309 },
      path: 'direct',
      from: '2026-10-28',
      to: '2026-11-05',
    },
  },
  {
    // Passed 29 runs of 29 on the code before, failed 3 of 25 (one item short of a day) when the
    // fix of the case above asked the day again instead of flagging it: during a rolling deploy a
    // day asked anew is answered under one of the readings as its halves were, and settled on it.
    // Flagged since: 15 runs of 15 pass.
    note: 'enddate turned exclusive, rolling, queue, UTC+2, instants honoured: a cut day asked anew mid-deploy',
    fixed: true,
    c: {
      seed: 31146,
      kind: 'enddate',
      before: {
        startdate: 'exclusive',
        enddate: 'inclusive',
        order: 'newest-first',
        cap: 100,
        maxLimit: 300,
        dayOffsetMinutes: 120,
        instants: 'honoured',
      },
      after: {
        startdate: 'exclusive',
        enddate: 'exclusive',
        order: 'newest-first',
        cap: 100,
        maxLimit: 300,
        dayOffsetMinutes: 120,
        instants: 'honoured',
      },
      plan: { switchAt: 9, steadyAt: 31, seed: 712031146 },
      path: 'queue',
      from: '2026-11-07',
      to: '2026-11-15',
    },
  },
  {
    // Not fixed: failed 1 run of 1 in a wide run (seed 8880023, case 16), 0 of 2 alone: feedback
    // 11-09, the range's last day, 0 of 66. A rolling deploy turned the start bound inclusive; the
    // reading learned it from a new-deploy answer, and the day's request 11-09..11-11, twice
    // answered by the old deploy (exclusive start: 11-10's 25 items alone), settled the day empty
    // on two empty answers. No answer of the run had shown an item of 11-09 (its neighbours' were
    // cut at the cap before it).
    note: 'start bound turned inclusive, rolling, queue, cap 100: a last day settled empty on two old-deploy answers',
    c: {
      seed: 97129,
      kind: 'startdate',
      before: {
        startdate: 'exclusive',
        enddate: 'exclusive',
        order: 'oldest-first',
        cap: 100,
        maxLimit: null,
        dayOffsetMinutes: 0,
        instants: 'refused',
      },
      after: {
        startdate: 'inclusive',
        enddate: 'exclusive',
        order: 'oldest-first',
        cap: 100,
        maxLimit: null,
        dayOffsetMinutes: 0,
        instants: 'refused',
      },
      plan: { switchAt: 2, steadyAt: 38, seed: 2838497129 },
      path: 'queue',
      from: '2026-10-30',
      to: '2026-11-09',
    },
  },
  {
    // Failed 1 run of 1 in a wide run (seed 8880023, case 17), 0 of 2 alone: feedback 11-19, the
    // range's last day, 26 of 30. One deploy (not rolling) turned the end bound exclusive on a
    // UTC+2 server; the day settled on 11-19..11-20 from the new deploy, which serves the UTC day
    // to 22:00 only, and the run's stale verdict that followed reopened 10 other days, not it.
    // Fixed: the run's end asks the day after the range, whose answer holds those hours
    // (reading-session.ts, daysAfterStretches); the class plays deterministically in
    // test/extract/midrun-readings.test.ts, where three cases settled the last day short before.
    note: 'end bound turned exclusive, one deploy, direct, UTC+2, cap 100: the last day missed its last 2 h',
    fixed: true,
    c: {
      seed: 42672,
      kind: 'enddate',
      before: {
        startdate: 'inclusive',
        enddate: 'inclusive',
        order: 'oldest-first',
        cap: 100,
        maxLimit: null,
        dayOffsetMinutes: 120,
        instants: 'honoured',
      },
      after: {
        startdate: 'inclusive',
        enddate: 'exclusive',
        order: 'oldest-first',
        cap: 100,
        maxLimit: null,
        dayOffsetMinutes: 120,
        instants: 'honoured',
      },
      plan: { switchAt: 44, steadyAt: 44, seed: 3591542672 },
      path: 'direct',
      from: '2026-11-12',
      to: '2026-11-19',
    },
  },
];
