import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { atCap, proveCap } from '../../src/extract/server-reading.js';
import { silentLogger } from '../../src/log/logger.js';
import { exchangeVerdicts, hearCheck, loadReadings, shareCheck } from '../../src/sync/reading-store.js';
import { createTestDatabase, type TestDatabase } from '../helpers/database.js';
import { capturingLogger } from '../helpers/fake-clock.js';

/**
 * What a queued run's workers share of a resource beside their stale verdicts (reading-store.ts
 * shareCheck, hearCheck): the check of the stored reading, the quiet decision and the largest
 * answer. The last two are the run's only while it learns the server together: once a worker
 * found the reading stale, each learns them again from its own answers, as every re-learning does.
 */
describe("a queued run's shared checks", () => {
  let t: TestDatabase;
  let runId = 100;
  const run = () => ({ runId, logger: silentLogger() });

  beforeAll(async () => {
    t = await createTestDatabase();
  });
  afterAll(async () => {
    await t?.drop();
  });

  /** A worker of the run, as it starts on source main. */
  const worker = () => loadReadings(t.db, 'main', runId);

  it("a worker starting on the run takes another's check, quiet decision and largest answer as its own", async () => {
    runId += 1;
    const first = await worker();
    Object.assign(first.knowledge.survey, { staleChecked: true, quiet: true });
    first.knowledge.survey.reading.largestResponse = 33;
    await shareCheck(t.db, first, 'survey', run());

    const later = await worker();
    expect(later.knowledge.survey.staleChecked).toBe(true);
    expect(later.knowledge.survey.quiet).toBe(true);
    expect(later.knowledge.survey.reading.largestResponse).toBe(33);
    // Of survey only.
    expect(later.knowledge.feedback.quiet).toBeUndefined();
    expect(later.knowledge.feedback.reading.largestResponse).toBe(0);
  });

  it('shared before the check is made, the largest answer is not taken for the check', async () => {
    runId += 1;
    const first = await worker();
    first.knowledge.feedback.reading.largestResponse = 120;
    await shareCheck(t.db, first, 'feedback', run());

    const later = await worker();
    expect(later.knowledge.feedback.staleChecked).toBeUndefined();
    expect(later.knowledge.feedback.reading.largestResponse).toBe(120);
  });

  it('quiet mode one worker ended is ended for the run: a worker in it hears so and leaves it', async () => {
    runId += 1;
    const [a, b] = [await worker(), await worker()];
    Object.assign(a.knowledge.recordings, { staleChecked: true, quiet: true });
    await shareCheck(t.db, a, 'recordings', run());
    b.knowledge.recordings.quiet = false;
    await shareCheck(t.db, b, 'recordings', run());
    // A quiet answer told after the end does not bring quiet mode back.
    await shareCheck(t.db, a, 'recordings', run());
    expect((await worker()).knowledge.recordings.quiet).toBe(false);

    a.knowledge.recordings.reading.largestResponse = 5;
    await shareCheck(t.db, a, 'recordings', run());
    expect(a.knowledge.recordings.quiet).toBe(false);
  });

  it('a largest answer is not heard where a cap is proved: one above it is news of the server to ask about', async () => {
    const shared = { checked: false, quiet: null, largestResponse: 400, stale: false, caps: [] };
    const capped = await loadReadings(t.db, 'main');
    proveCap(capped.knowledge.feedback.reading, 100);
    capped.knowledge.feedback.reading.largestResponse = 100;
    hearCheck(capped, 'feedback', shared);
    expect(capped.knowledge.feedback.reading.largestResponse).toBe(100);
    const uncapped = await loadReadings(t.db, 'main');
    hearCheck(uncapped, 'feedback', shared);
    expect(uncapped.knowledge.feedback.reading.largestResponse).toBe(400);
  });

  it('once a worker found the reading stale, the quiet decision and largest answer are neither heard nor told; the check still is', async () => {
    runId += 1;
    const [a, b] = [await worker(), await worker()];
    Object.assign(a.knowledge.feedback, { staleChecked: true, quiet: false });
    a.knowledge.feedback.reading.largestResponse = 50;
    await shareCheck(t.db, a, 'feedback', run());
    // b re-learned the reading (stale) and tells so.
    b.knowledge.feedback.relearned = 1;
    b.knowledge.feedback.staleChecked = true;
    await exchangeVerdicts(t.db, b, 'feedback', run());

    // What a, which has not heard the verdict yet, tells now is of the old reading: not kept.
    a.knowledge.feedback.reading.largestResponse = 900;
    await shareCheck(t.db, a, 'feedback', run());
    const row = await t.db
      .selectFrom('queue_run_checks')
      .select(['checked', 'quiet', 'largest_response'])
      .where('run_id', '=', runId)
      .executeTakeFirstOrThrow();
    expect(row).toEqual({ checked: true, quiet: false, largest_response: 50 });

    // A worker starting now learns the server for itself, trusting the run's check.
    const later = await worker();
    expect(later.knowledge.feedback.staleChecked).toBe(true);
    expect(later.knowledge.feedback.quiet).toBeUndefined();
    expect(later.knowledge.feedback.reading.largestResponse).toBe(0);
    // And b, which re-learned, tells nothing of what it learns since.
    b.knowledge.feedback.reading.largestResponse = 7000;
    b.knowledge.feedback.quiet = true;
    await shareCheck(t.db, b, 'feedback', run());
    const after = await t.db
      .selectFrom('queue_run_checks')
      .select(['quiet', 'largest_response'])
      .where('run_id', '=', runId)
      .executeTakeFirstOrThrow();
    expect(after).toEqual({ quiet: false, largest_response: 50 });
  });

  it("a stale verdict that makes the run's check is said as a check is, by the worker that told it, once; one told after the check was recorded is not", async () => {
    runId += 1;
    const [a, b, c] = [await worker(), await worker(), await worker()];
    const said = (lines: Record<string, unknown>[]) =>
      lines
        .filter((line) => line.msg === 'checked the stored server reading for the run')
        .map((l) => l.resource);
    // a re-learned the reading before any worker recorded the check: its verdict records it.
    const first = capturingLogger();
    a.knowledge.survey.relearned = 1;
    a.knowledge.survey.staleChecked = true;
    await exchangeVerdicts(t.db, a, 'survey', { runId, logger: first.logger });
    // Heard back with its next window's claim, the row would otherwise silence its own shareCheck.
    hearCheck(a, 'survey', { checked: true, quiet: null, largestResponse: 0, caps: [], stale: true });
    await shareCheck(t.db, a, 'survey', { runId, logger: first.logger });
    expect(said(first.lines)).toEqual(['survey']);
    // b checked and recorded it; c's verdict, told later, makes no check of its own.
    b.knowledge.feedback.staleChecked = true;
    await shareCheck(t.db, b, 'feedback', run());
    const third = capturingLogger();
    c.knowledge.feedback.relearned = 1;
    c.knowledge.feedback.staleChecked = true;
    await exchangeVerdicts(t.db, c, 'feedback', { runId, logger: third.logger });
    expect(said(third.lines)).toEqual([]);
  });

  it("a cap one worker proved is every worker's of the source, told once and heard whatever was found stale", async () => {
    runId += 1;
    const [a, b] = [await worker(), await worker()];
    // b found the reading stale: caps are shared all the same (a cap is the server's, not a reading's).
    b.knowledge.recordings.relearned = 1;
    b.knowledge.recordings.staleChecked = true;
    await exchangeVerdicts(t.db, b, 'recordings', run());

    proveCap(a.knowledge.feedback.reading, 60);
    await shareCheck(t.db, a, 'feedback', run());
    const told = () =>
      t.db.selectFrom('queue_run_checks').select(['resource', 'caps']).where('run_id', '=', runId).execute();
    expect(await told()).toContainEqual({ resource: 'feedback', caps: [60] });

    // b hears it when it next tells something (a larger answer), for each resource, not only feedback's.
    b.knowledge.feedback.reading.largestResponse = 3;
    await shareCheck(t.db, b, 'feedback', run());
    expect(atCap(b.knowledge.recordings.reading, 60)).toBe(true);
    expect(atCap(b.knowledge.survey.reading, 60)).toBe(true);
    expect(atCap(b.knowledge.survey.reading, 59)).toBe(false);
    // A worker starting on the run hears it with the run's rows.
    expect(atCap((await worker()).knowledge.recordings.reading, 60)).toBe(true);

    // Told once: a cap heard is not news to tell again; a second one is, and the row keeps both.
    const rows = await told();
    await shareCheck(t.db, a, 'feedback', run());
    expect(await told()).toEqual(rows);
    proveCap(b.knowledge.survey.reading, 45);
    await shareCheck(t.db, b, 'feedback', run());
    expect(await told()).toContainEqual({ resource: 'feedback', caps: [45, 60] });
  });
});
