import { describe, expect, it } from 'vitest';
import { feedbackSchema } from '../../src/schemas/feedback.js';
import { heatmapSchema } from '../../src/schemas/heatmap.js';
import { recordingSchema } from '../../src/schemas/recording.js';
import { surveyAnswerSchema } from '../../src/schemas/survey-answer.js';
import { testResultSchema, testSchema } from '../../src/schemas/test.js';
import { generateDataset } from '../../src/simulator/dataset.js';
import { expectAllValid, LONG_RANGE, SHORT_RANGE } from './sim-helpers.js';

describe('generateDataset (the data the simulator serves, built without a server)', () => {
  const truth = generateDataset({ ...LONG_RANGE }).truth();

  it('produces items that all match the zod schemas of the spec', () => {
    expectAllValid(testSchema, [...truth.abTests, ...truth.personalizationTests]);
    expectAllValid(testResultSchema, [
      ...Object.values(truth.results.abtesting).flat(),
      ...Object.values(truth.results.personalization).flat(),
    ]);
    expectAllValid(feedbackSchema, truth.feedback);
    expectAllValid(surveyAnswerSchema, truth.survey);
    expectAllValid(recordingSchema, truth.recordings);
    expectAllValid(heatmapSchema, truth.heatmaps);
    expect(truth.malformed).toEqual({ feedback: [], survey: [], recordings: [] });
  });

  it('is identical for the same seed and different for another seed', () => {
    expect(generateDataset({ ...LONG_RANGE, seed: 1 }).truth()).toEqual(truth);
    const other = generateDataset({ ...LONG_RANGE, seed: 2 }).truth();
    expect(other.feedback).not.toEqual(truth.feedback);
    expect(other.abTests).not.toEqual(truth.abTests);
  });

  it('generates a day the same whether it is read alone or after other days', () => {
    const alone = generateDataset({ ...LONG_RANGE }).day('2024-03-07');
    expect(alone.feedback).toEqual(truth.feedback.filter((item) => item.dt.startsWith('2024-03-07')));
    expect(alone.survey).toEqual(truth.survey.filter((item) => item.dt.startsWith('2024-03-07')));
  });

  it('has 4 A/B tests and 3 personalization tests with a control and numbered variants', () => {
    expect(truth.abTests).toHaveLength(4);
    expect(truth.personalizationTests).toHaveLength(3);
    for (const results of [
      ...Object.values(truth.results.abtesting),
      ...Object.values(truth.results.personalization),
    ]) {
      expect(results[0]?.variant).toBe('control');
      expect(results.slice(1).map((result) => result.variant)).toEqual(
        results.slice(1).map((_, index) => `variant ${index + 1}`),
      );
      expect(results.length).toBeGreaterThanOrEqual(2);
      for (const result of results) expect(result.complete).toBeLessThanOrEqual(result.total);
    }
  });

  it('keys feedback by the pair (id, feedback_id): pairs are unique, ids alone repeat across forms', () => {
    const pairs = new Set(truth.feedback.map((item) => `${item.id}:${item.feedback_id}`));
    expect(pairs.size).toBe(truth.feedback.length);
    expect(new Set(truth.feedback.map((item) => item.id)).size).toBeLessThan(truth.feedback.length);
    for (const item of truth.feedback) expect(Number.isSafeInteger(item.id) && item.id < 2 ** 31).toBe(true);
    expect(new Set(truth.survey.map((item) => `${item.id}:${item.question_id}`)).size).toBe(
      truth.survey.length,
    );
    expect(new Set(truth.recordings.map((item) => item.id)).size).toBe(truth.recordings.length);
  });

  it('places every windowed item on its day and lists them oldest-first', () => {
    const dataset = generateDataset({ ...LONG_RANGE });
    for (const day of dataset.days) {
      const items = dataset.day(day);
      for (const item of [...items.feedback, ...items.survey, ...items.recordings]) {
        expect(item.dt.slice(0, 10)).toBe(day);
      }
      const times = items.feedback.map((item) => item.dt);
      expect(times).toEqual([...times].sort());
    }
  });

  it('shares a pool of visitors whose attributes are identical every time they appear', () => {
    const seen = new Map<string, string>();
    for (const item of [...truth.feedback, ...truth.survey]) {
      const json = JSON.stringify(item.visitor);
      expect(seen.get(item.visitor.id) ?? json).toBe(json);
      seen.set(item.visitor.id, json);
    }
    const inFeedback = new Set(truth.feedback.map((item) => item.visitor.id));
    expect(truth.survey.some((item) => inFeedback.has(item.visitor.id))).toBe(true);
    const visitors = [...truth.feedback, ...truth.survey].map((item) => item.visitor);
    expect(visitors.some((visitor) => visitor.company === '')).toBe(true);
    expect(visitors.some((visitor) => visitor.ref_page === '')).toBe(true);
    expect(visitors.some((visitor) => visitor.company !== '' && visitor.ref_page !== '')).toBe(true);
  });

  it('has survey responses that answer several questions under one id', () => {
    const byId = new Map<number, typeof truth.survey>();
    for (const item of truth.survey) byId.set(item.id, [...(byId.get(item.id) ?? []), item]);
    const multi = [...byId.values()].filter((answers) => answers.length > 1);
    expect(multi.length).toBeGreaterThan(0);
    for (const answers of multi) {
      expect(new Set(answers.map((answer) => answer.question_id)).size).toBe(answers.length);
      expect(
        new Set(answers.map((answer) => `${answer.session}|${answer.dt}|${answer.visitor.id}`)).size,
      ).toBe(1);
    }
  });

  it('has heatmaps with an end_time and heatmaps whose end_time is null', () => {
    expect(truth.heatmaps.some((heatmap) => heatmap.end_time === null)).toBe(true);
    expect(truth.heatmaps.some((heatmap) => typeof heatmap.end_time === 'string')).toBe(true);
  });

  it('has a busy day (the 10th) with more feedback than the default cap, and empty days', () => {
    expect(truth.meta.busyDay).toBe('2024-03-10');
    expect(truth.feedback.filter((item) => item.dt.startsWith('2024-03-10')).length).toBe(1500);
    expect(truth.meta.emptyDays).toContain('2024-03-03');
    for (const day of truth.meta.emptyDays) {
      const onDay = [...truth.feedback, ...truth.survey, ...truth.recordings].filter((item) =>
        item.dt.startsWith(day),
      );
      expect(onDay).toEqual([]);
    }
  });

  it('varies the volume from day to day around the requested means', () => {
    const dataset = generateDataset({ ...SHORT_RANGE, volume: { feedbackPerDay: 100 } });
    const counts = dataset.days.map((day) => dataset.day(day).feedback.length);
    expect(new Set(counts).size).toBeGreaterThan(2);
    expect(dataset.meta().busyDay).toBeNull();
    expect(dataset.totals().feedback).toBe(dataset.truth().feedback.length);
  });

  // How fast is the benchmarks' business (they generate a million items); here, that the counts agree.
  it('builds 100,000 items one day at a time, as many as its totals say', () => {
    const dataset = generateDataset({
      from: '2024-01-01',
      to: '2024-01-30',
      volume: { feedbackPerDay: 1200, surveyPerDay: 1200, recordingsPerDay: 1000 },
    });
    let count = 0;
    for (const day of dataset.days) {
      const items = dataset.day(day);
      count += items.feedback.length + items.survey.length + items.recordings.length;
    }
    expect(count).toBe(Object.values(dataset.totals()).reduce((a, b) => a + b, 0));
    expect(count).toBeGreaterThan(80_000);
  });

  it('rejects a range whose bounds are not dates or are reversed', () => {
    expect(() => generateDataset({ from: '2024-3-1', to: '2024-03-05' })).toThrow(/YYYY-MM-DD/);
    expect(() => generateDataset({ from: '2024-03-05', to: '2024-03-01' })).toThrow(/must not be after/);
  });
});

describe('advance (the service moving on)', () => {
  it('adds late items to the last three days, edits feedback, removes an A/B test and grows results', () => {
    const dataset = generateDataset({ ...SHORT_RANGE });
    const before = dataset.truth();
    const report = dataset.advance();
    const after = dataset.truth();

    expect(report.round).toBe(1);
    expect(report.lateDays).toEqual(['2024-03-03', '2024-03-04', '2024-03-05']);
    expect(after.feedback.length).toBe(before.feedback.length + report.late.feedback);
    expect(after.survey.length).toBe(before.survey.length + report.late.survey);
    expect(after.recordings.length).toBe(before.recordings.length + report.late.recordings);
    const newFeedback = after.feedback.filter(
      (item) => !before.feedback.some((old) => old.id === item.id && old.feedback_id === item.feedback_id),
    );
    for (const item of newFeedback) expect(report.lateDays).toContain(item.dt.slice(0, 10));
    expectAllValid(feedbackSchema, after.feedback);
    expectAllValid(surveyAnswerSchema, after.survey);
    expectAllValid(recordingSchema, after.recordings);
    expect(new Set(after.feedback.map((item) => `${item.id}:${item.feedback_id}`)).size).toBe(
      after.feedback.length,
    );

    expect(report.edited.length).toBeGreaterThan(0);
    for (const { id, feedback_id } of report.edited) {
      const old = before.feedback.find((item) => item.id === id && item.feedback_id === feedback_id);
      const edited = after.feedback.find((item) => item.id === id && item.feedback_id === feedback_id);
      expect(edited?.comment).toContain('[edited in round 1]');
      expect(edited?.comment).not.toBe(old?.comment);
    }

    expect(report.removedTests).toHaveLength(1);
    const removed = report.removedTests[0] as string;
    expect(after.abTests.map((test) => test.id)).not.toContain(removed);
    expect(after.results.abtesting[removed]).toBeUndefined();
    expect(dataset.results('abtesting', removed)).toBeUndefined();

    for (const test of after.abTests) {
      const grown = after.results.abtesting[test.id] ?? [];
      const old = before.results.abtesting[test.id] ?? [];
      grown.forEach((result, index) => {
        expect(result.total).toBeGreaterThan(old[index]?.total ?? Number.POSITIVE_INFINITY);
        expect(result.complete).toBeGreaterThanOrEqual(old[index]?.complete ?? Number.POSITIVE_INFINITY);
        expect(result.complete).toBeLessThanOrEqual(result.total);
      });
      expect(test.updated_at > (before.abTests.find((old) => old.id === test.id)?.updated_at ?? '')).toBe(
        true,
      );
    }
  });

  it('leaves a truth taken earlier untouched', () => {
    const dataset = generateDataset({ ...SHORT_RANGE });
    const before = dataset.truth();
    const copy = structuredClone(before);
    dataset.advance();
    expect(before).toEqual(copy);
  });

  it('keeps going deterministically, never removes the last A/B test, and can restore removed ones', () => {
    const a = generateDataset({ ...SHORT_RANGE });
    const b = generateDataset({ ...SHORT_RANGE });
    for (let round = 0; round < 5; round++) expect(a.advance()).toEqual(b.advance());
    expect(a.truth()).toEqual(b.truth());
    expect(a.tests('abtesting')).toHaveLength(1);
    const restored = a.advance({ restoreRemoved: true });
    expect(restored.restoredTests).toHaveLength(3);
    expect(a.tests('abtesting')).toHaveLength(4);
  });

  it('takes a seed for the round, so different seeds give different late items', () => {
    const a = generateDataset({ ...SHORT_RANGE });
    const b = generateDataset({ ...SHORT_RANGE });
    a.advance({ seed: 10 });
    b.advance({ seed: 11 });
    expect(a.truth().feedback).not.toEqual(b.truth().feedback);
  });
});
