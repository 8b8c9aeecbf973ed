import { Counter, Gauge, Histogram, Registry, Summary } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { MissingToolError, requireTool } from '../helpers/required-tool.js';
import { checkExposition, findPromtool, PROMTOOL, promtoolCheck } from './check-exposition.js';
import { lintExposition } from './exposition-lint.js';

/** One family of each type, with the escapes a label value may hold. */
const VALID = `# HELP app_requests_total Requests answered.
# TYPE app_requests_total counter
app_requests_total{outcome="ok"} 3
app_requests_total{outcome="a \\"quoted\\" \\\\ value\\nnext, {with} braces"} 1 1700000000000
# HELP app_queue_depth Jobs waiting, with a \\\\ and a \\n in the help.
# TYPE app_queue_depth gauge
app_queue_depth -2.5e3
# HELP app_latency_seconds Time to answer.
# TYPE app_latency_seconds histogram
app_latency_seconds_bucket{route="/a",le="0.1"} 1
app_latency_seconds_bucket{route="/a",le="1"} 3
app_latency_seconds_bucket{route="/a",le="+Inf"} 4
app_latency_seconds_sum{route="/a"} 2.5
app_latency_seconds_count{route="/a"} 4
# HELP app_size_bytes Sizes.
# TYPE app_size_bytes summary
app_size_bytes{quantile="0.5"} 10
app_size_bytes{quantile="0.99"} NaN
app_size_bytes_sum 100
app_size_bytes_count 7
`;

const edit = (from: string | RegExp, to: string) => VALID.replace(from, to);
const drop = (line: string) => edit(`${line}\n`, '');

/**
 * Broken expositions, what our check says of each, and whether promtool rejects it too: where it
 * does not, our check is deliberately stricter (a Prometheus server would still take the text, but
 * a dashboard reading it would be wrong or a scrape would drop it later).
 */
const BROKEN: { name: string; text: string; says: RegExp; promtool: boolean }[] = [
  {
    name: 'a family without HELP',
    text: drop('# HELP app_queue_depth Jobs waiting, with a \\\\ and a \\n in the help.'),
    says: /app_queue_depth: no help text/,
    promtool: true,
  },
  {
    name: 'a family without TYPE',
    text: drop('# TYPE app_queue_depth gauge'),
    says: /app_queue_depth has samples before its HELP and TYPE/,
    promtool: false,
  },
  {
    name: 'TYPE after the samples',
    text: edit(
      '# TYPE app_queue_depth gauge\napp_queue_depth -2.5e3',
      'app_queue_depth -2.5e3\n# TYPE app_queue_depth gauge',
    ),
    says: /TYPE of app_queue_depth after its samples/,
    promtool: true,
  },
  {
    name: 'a second HELP line',
    text: edit('# TYPE app_queue_depth gauge', '# HELP app_queue_depth Again.\n# TYPE app_queue_depth gauge'),
    says: /second HELP line for app_queue_depth/,
    promtool: true,
  },
  {
    name: 'an unknown type',
    text: edit('# TYPE app_queue_depth gauge', '# TYPE app_queue_depth meter'),
    says: /unknown TYPE "meter"/,
    promtool: true,
  },
  {
    name: 'a counter not named _total',
    text: VALID.replaceAll('app_requests_total', 'app_requests'),
    says: /app_requests: counter metrics should have "_total" suffix/,
    promtool: true,
  },
  {
    name: 'a gauge named _total',
    text: VALID.replaceAll('app_queue_depth', 'app_queue_total'),
    says: /non-counter metrics should not have "_total" suffix/,
    promtool: true,
  },
  {
    name: 'an invalid metric name',
    text: edit('app_queue_depth -2.5e3', 'app-queue_depth -2.5e3'),
    says: /invalid metric name/,
    promtool: true,
  },
  {
    name: 'an invalid label name',
    text: edit('{outcome="ok"}', '{out-come="ok"}'),
    says: /a label is not name="value"|invalid label name/,
    promtool: true,
  },
  {
    name: 'a reserved label name',
    text: edit('{outcome="ok"}', '{__outcome="ok"}'),
    says: /invalid label name "__outcome"/,
    promtool: false,
  },
  {
    name: 'a label twice',
    text: edit('{outcome="ok"}', '{outcome="ok",outcome="no"}'),
    says: /label outcome twice/,
    promtool: true,
  },
  {
    name: 'an unknown escape in a label value',
    text: edit('{outcome="ok"}', '{outcome="o\\tk"}'),
    says: /invalid escape in the value of label outcome/,
    promtool: true,
  },
  {
    name: 'an unescaped quote in a label value',
    text: edit('{outcome="ok"}', '{outcome="o"k"}'),
    says: /labels not separated by a comma/,
    promtool: true,
  },
  {
    name: 'a value that is not a number',
    text: edit('app_queue_depth -2.5e3', 'app_queue_depth 2,5'),
    says: /value "2,5" is not a number/,
    promtool: true,
  },
  {
    name: 'text after the timestamp',
    text: edit('1 1700000000000', '1 1700000000000 extra'),
    says: /text after the value and timestamp/,
    promtool: true,
  },
  {
    name: 'a camelCase name',
    text: VALID.replaceAll('app_queue_depth', 'app_queueDepth'),
    says: /'snake_case' not 'camelCase'/,
    promtool: true,
  },
  {
    name: 'a unit that is not a base unit',
    text: VALID.replaceAll('app_latency_seconds', 'app_latency_milliseconds'),
    says: /use base unit "seconds" instead of "milliseconds"/,
    promtool: true,
  },
  {
    name: 'an abbreviated unit',
    text: VALID.replaceAll('app_queue_depth', 'app_queue_depth_ms'),
    says: /abbreviated units/,
    promtool: true,
  },
  {
    name: 'a histogram bucket without le',
    text: edit('{route="/a",le="1"}', '{route="/a"}'),
    says: /a bucket of app_latency_seconds without a valid le/,
    promtool: false,
  },
  {
    name: 'histogram buckets that are not cumulative',
    text: edit('{route="/a",le="1"} 3', '{route="/a",le="1"} 0'),
    says: /buckets not cumulative at le=1/,
    promtool: false,
  },
  {
    name: 'a histogram without its +Inf bucket',
    text: drop('app_latency_seconds_bucket{route="/a",le="+Inf"} 4'),
    says: /no \+Inf bucket last/,
    promtool: false,
  },
  {
    name: 'a +Inf bucket that is not _count',
    text: edit('app_latency_seconds_count{route="/a"} 4', 'app_latency_seconds_count{route="/a"} 5'),
    says: /the \+Inf bucket is not _count/,
    promtool: false,
  },
  {
    name: 'a histogram without _sum',
    text: drop('app_latency_seconds_sum{route="/a"} 2.5'),
    says: /app_latency_seconds .*: no _sum/,
    promtool: false,
  },
  {
    name: 'a summary without _count',
    text: drop('app_size_bytes_count 7'),
    says: /app_size_bytes \[\]: no _count/,
    promtool: false,
  },
  {
    name: 'a duplicate series',
    text: edit('app_queue_depth -2.5e3', 'app_queue_depth -2.5e3\napp_queue_depth 1'),
    says: /duplicate series app_queue_depth\{\}/,
    promtool: false,
  },
  {
    name: 'a family split by another',
    text: `${VALID}app_requests_total{outcome="late"} 1\n`,
    says: /the samples of app_requests_total are not together/,
    promtool: false,
  },
  {
    name: 'a negative counter',
    text: edit('{outcome="ok"} 3', '{outcome="ok"} -3'),
    says: /a counter is negative/,
    promtool: false,
  },
];

describe('lintExposition, the exposition check of npm test', () => {
  it('accepts every type, label escapes, timestamps, NaN and +Inf', () => {
    expect(lintExposition(VALID)).toEqual([]);
  });

  it('accepts what prom-client writes for each metric type', async () => {
    const registry = new Registry();
    const counter = new Counter({
      name: 'x_events_total',
      help: 'h',
      labelNames: ['kind'],
      registers: [registry],
    });
    counter.inc({ kind: 'a "b"\\c\nd' });
    new Gauge({ name: 'x_depth', help: 'h', registers: [registry] }).set(-1);
    const histogram = new Histogram({
      name: 'x_wait_seconds',
      help: 'h',
      labelNames: ['q'],
      registers: [registry],
    });
    histogram.observe({ q: 'a' }, 0.2);
    histogram.observe({ q: 'b' }, 20);
    new Summary({ name: 'x_body_bytes', help: 'h', registers: [registry] }).observe(5);
    expect(lintExposition(await registry.metrics())).toEqual([]);
  });

  it.each(BROKEN)('rejects $name', ({ text, says }) => {
    const problems = lintExposition(text);
    expect(problems, problems.join('\n')).toEqual(expect.arrayContaining([expect.stringMatching(says)]));
  });

  it('checkExposition fails on what the lint rejects, with its lines in the output', async () => {
    const printed: string[] = [];
    const withoutPromtool = { PROMTOOL_PATH: '/nonexistent' };
    const check = await checkExposition(BROKEN[0]?.text ?? '', withoutPromtool, (line) => printed.push(line));
    expect(check.code).toBe(1);
    expect(check.output).toMatch(/^exposition-lint: app_queue_depth: no help text$/m);
    expect(await checkExposition(VALID, withoutPromtool, (line) => printed.push(line))).toEqual({
      code: 0,
      output: '',
    });
    expect(printed).toEqual([
      expect.stringMatching(/^skipped promtool check metrics \(exposition-lint.ts checked/),
    ]);
  });

  it('checkExposition without promtool fails in CI, naming it', async () => {
    const check = checkExposition(VALID, { PROMTOOL_PATH: '/nonexistent', CI: 'true' });
    await expect(check).rejects.toThrow(MissingToolError);
    await expect(check).rejects.toThrow(/^promtool is missing and CI is set/);
  });
});

const promtool = findPromtool();
describe.runIf(
  requireTool(
    {
      name: PROMTOOL.name,
      install: PROMTOOL.install,
      check: 'the comparison of exposition-lint.ts with promtool',
    },
    promtool !== undefined,
  ),
)('promtool check metrics on the same texts', () => {
  it('accepts the valid text', async () => {
    expect(await promtoolCheck(promtool ?? '', VALID)).toEqual({ code: 0, output: '' });
  });

  it.each(BROKEN)(
    'on $name: rejects it exactly where the case says so',
    async ({ text, promtool: rejects }) => {
      const check = await promtoolCheck(promtool ?? '', text);
      expect(check.code !== 0, check.output).toBe(rejects);
    },
  );
});
