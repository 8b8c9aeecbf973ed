import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { inTransaction, type LoadTransaction } from '../../src/db/transaction.js';
import { loadHeatmaps, loadTestResults, loadTests } from '../../src/load/snapshots.js';
import { ensureSource } from '../../src/load/sources.js';
import type { Feedback } from '../../src/schemas/feedback.js';
import type { Heatmap } from '../../src/schemas/heatmap.js';
import type { Recording } from '../../src/schemas/recording.js';
import type { WindowedResource } from '../../src/schemas/resources.js';
import type { SurveyAnswer } from '../../src/schemas/survey-answer.js';
import type { Test, TestResult } from '../../src/schemas/test.js';
import { storeWindow, type WindowToStore } from '../../src/sync/store-window.js';
import type { DayString } from '../../src/time/days.js';
import { receiveDelivery } from '../../src/webhooks/receive.js';
import { createTestDatabase, type TestDatabase } from '../helpers/database.js';
import { feedbackBody, surveyBody, visitor } from '../webhooks/webhook-helpers.js';

/**
 * A busy site's day: as many items as INSIGHTS_MAX_LIMIT lets one answer hold. No statement the
 * loader sends may grow with the window: a literal list of 10,000 tuples exceeds PostgreSQL's
 * stack depth, 10,000 rows of 7 parameters its 65,535 bind parameters.
 */
const ITEMS = 10_000;
const SOURCE = 'busy';
const BASE_URL = 'http://api.example.test';
const DAY = '2026-03-02' as DayString;
const dtOf = (n: number) => new Date(Date.UTC(2026, 2, 2, 0, 0, 0, n)).toISOString();
const range = (n: number) => Array.from({ length: n }, (_, i) => i);

const feedback = range(ITEMS).map(
  (i): Feedback => ({
    id: i + 1,
    feedback_id: 1 + (i % 3),
    question: 'How was your visit?',
    session: `s-${i}`,
    comment: `comment ${i}`,
    rating: 1 + (i % 5),
    rating_text: 'good',
    dt: dtOf(i),
    url: 'https://shop.example.test/',
    screenshot: `https://cdn.example.test/${i}.png`,
    visitor: visitor(`v-${i % 7_000}`),
  }),
);
const survey = range(ITEMS).map(
  (i): SurveyAnswer => ({
    id: i + 1,
    question_id: 1 + (i % 4),
    question: 'What brought you here?',
    session: `s-${i}`,
    comment: `answer ${i}`,
    dt: dtOf(i),
    url: 'https://shop.example.test/',
    visitor: visitor(`v-${i % 9_000}`),
  }),
);
const recordings = range(ITEMS).map(
  (i): Recording => ({
    id: `rec-${i}`,
    duration: i,
    landing_page: 'https://shop.example.test/',
    referral: '',
    country: 'DE',
    city: 'Berlin',
    user_ip: '192.0.2.1',
    user_agent: 'Mozilla/5.0',
    dt: dtOf(i),
    video_link: `https://cdn.example.test/rec-${i}.mp4`,
  }),
);

function windowOf<R extends WindowedResource>(
  resource: R,
  valid: WindowToStore<R>['valid'],
): WindowToStore<R> {
  return {
    sourceId: SOURCE,
    baseUrl: BASE_URL,
    resource,
    day: DAY,
    status: 'done',
    valid,
    rejected: [],
    requestedLimit: ITEMS,
    servedCount: valid.length,
    truncated: false,
    runId: null,
    startDay: '2026-03-01' as DayString,
    today: '2026-03-05' as DayString,
  };
}

describe('a window of 10,000 items of each resource loads whole', () => {
  let t: TestDatabase;

  beforeAll(async () => {
    t = await createTestDatabase();
    // Rows a webhook delivered first, under a visitor the API's copy contradicts: the loader
    // looks up every item of the window among them.
    await receiveDelivery(
      t.pool,
      { name: SOURCE, baseUrl: BASE_URL },
      feedbackBody({ id: 5, feedback_id: 2, visitor: visitor('v-hook') }),
    );
    await receiveDelivery(
      t.pool,
      { name: SOURCE, baseUrl: BASE_URL },
      surveyBody({ id: 9, question_id: 1, visitor: visitor('v-hook2') }),
    );
  });
  afterAll(() => t.drop());

  it('feedback: every item stored as sent, the contradicted webhook visitor gone', async () => {
    const counts = await storeWindow(t.pool, windowOf('feedback', feedback));
    expect(counts.inserted + counts.updated).toBe(ITEMS);
    const stored = await t.db
      .selectFrom('feedback')
      .select(['id', 'feedback_id', 'comment', 'visitor_id', 'origin'])
      .where('source_id', '=', SOURCE)
      .orderBy('id')
      .execute();
    expect(stored).toEqual(
      feedback.map((f) => ({
        id: f.id,
        feedback_id: f.feedback_id,
        comment: f.comment,
        visitor_id: f.visitor.id,
        origin: f.id === 5 ? 'both' : 'api',
      })),
    );
    const hook = await t.db.selectFrom('visitors').select('id').where('id', '=', 'v-hook').execute();
    expect(hook).toEqual([]);
  });

  it('survey answers: every item stored as sent, and their visitors', async () => {
    await storeWindow(t.pool, windowOf('survey', survey));
    const stored = await t.db
      .selectFrom('survey_answers')
      .select(['id', 'question_id', 'comment', 'visitor_id'])
      .where('source_id', '=', SOURCE)
      .orderBy('id')
      .execute();
    expect(stored).toEqual(
      survey.map((a) => ({
        id: a.id,
        question_id: a.question_id,
        comment: a.comment,
        visitor_id: a.visitor.id,
      })),
    );
    const visitors = await t.db
      .selectFrom('visitors')
      .select((eb) => eb.fn.countAll<string>().as('n'))
      .where('source_id', '=', SOURCE)
      .executeTakeFirstOrThrow();
    expect(Number(visitors.n)).toBe(9_000);
  });

  it('recordings: every item stored as sent', async () => {
    await storeWindow(t.pool, windowOf('recordings', recordings));
    const stored = await t.db
      .selectFrom('recordings')
      .select(['id', 'duration'])
      .where('source_id', '=', SOURCE)
      .orderBy('duration')
      .execute();
    expect(stored).toEqual(recordings.map((r) => ({ id: r.id, duration: r.duration })));
  });
});

describe('snapshot lists and results of 10,000 entries load whole, and leave on evidence', () => {
  let t: TestDatabase;

  beforeAll(async () => {
    t = await createTestDatabase();
  });
  afterAll(() => t.drop());

  const stamp = '2026-03-01T00:00:00.000Z';
  const heatmaps = range(ITEMS).map(
    (i): Heatmap => ({
      id: `h-${String(i).padStart(5, '0')}`,
      name: `heatmap ${i}`,
      url: 'https://shop.example.test/',
      rule: 'contains',
      start_time: stamp,
      end_time: null,
      heatmap_limit: i,
      created_at: stamp,
      updated_at: stamp,
    }),
  );
  const tests = range(ITEMS).map(
    (i): Test => ({
      id: `t-${String(i).padStart(5, '0')}`,
      test_name: `test ${i}`,
      url: 'https://shop.example.test/',
      goal_profile_id: 'g',
      created_at: stamp,
      updated_at: stamp,
    }),
  );
  const results = range(ITEMS).map((i): TestResult => ({ variant: `var-${i}`, complete: i, total: i + 1 }));
  const load = <T>(fn: (trx: LoadTransaction) => Promise<T>) =>
    inTransaction(t.pool, async (trx) => {
      await ensureSource(trx, SOURCE, BASE_URL);
      return fn(trx);
    });

  it('heatmaps', async () => {
    await load((trx) => loadHeatmaps(trx, SOURCE, heatmaps, { complete: true }));
    const stored = await t.db
      .selectFrom('heatmaps')
      .select(['id', 'heatmap_limit'])
      .where('source_id', '=', SOURCE)
      .orderBy('id')
      .execute();
    expect(stored).toEqual(heatmaps.map((h) => ({ id: h.id, heatmap_limit: h.heatmap_limit })));
  });

  it('tests, their results and history; every test gone at once takes its results with it', async () => {
    await load((trx) => loadTests(trx, 'abtesting', SOURCE, tests, { complete: true }));
    const first = tests[0] as Test;
    await load((trx) =>
      loadTestResults(trx, 'abtesting', SOURCE, first.id, results, DAY, { complete: true }),
    );
    const history = await t.db
      .selectFrom('test_result_history')
      .select(['variant', 'complete', 'total'])
      .where('source_id', '=', SOURCE)
      .orderBy('complete')
      .execute();
    expect(history).toEqual(results);
    const gone = await load((trx) =>
      loadTests(trx, 'abtesting', SOURCE, [], { complete: true, gone: tests.map((x) => x.id) }),
    );
    expect(gone.removed).toBe(ITEMS + ITEMS);
    const listed = await t.db
      .selectFrom('ab_tests')
      .select('id')
      .where('source_id', '=', SOURCE)
      .where('removed_at', 'is', null)
      .execute();
    expect(listed).toEqual([]);
  });
});
