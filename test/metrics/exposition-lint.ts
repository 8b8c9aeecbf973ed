/**
 * A strict check of the Prometheus text exposition format (version 0.0.4), for `npm test` on a
 * machine without promtool: what `promtool check metrics` rejects (its parser and the promlint
 * rules), and more that Debian's promtool (2.42) lets pass but a scrape or a dashboard would
 * trip on: a family without TYPE, or with HELP and TYPE after its samples; a reserved (`__`)
 * label; a bucket without `le`; histogram buckets not cumulative, or without a +Inf bucket equal
 * to `_count`; a histogram or summary without `_sum` or `_count`; a duplicate series; a family's
 * samples split by another's; a negative counter. exposition-lint.test.ts pins, case by case,
 * which of these promtool rejects too. CI runs the real promtool as well (check-exposition.ts).
 * Pure: text in, problems out ([] = accepted).
 */

interface Sample {
  name: string;
  labels: [string, string][];
  value: number;
  line: number;
}

interface Family {
  name: string;
  help?: string;
  type?: string;
  samples: Sample[];
}

const METRIC_NAME = /^[a-zA-Z_:][a-zA-Z0-9_:]*$/;
const LABEL_NAME = /^[a-zA-Z_][a-zA-Z0-9_]*$/;
const TYPES = new Set(['counter', 'gauge', 'histogram', 'summary', 'untyped']);
/** Go's ParseFloat as the text parser uses it: decimals, exponents, Inf and NaN in any case. */
const FLOAT = /^[+-]?(?:(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?|inf(?:inity)?|nan)$/i;
const TIMESTAMP = /^-?\d+$/;
/** The only escapes a label value may hold. */
const ESCAPES: Record<string, string> = { '\\': '\\', '"': '"', n: '\n' };

export function lintExposition(text: string): string[] {
  const { families, problems } = parseExposition(text);
  for (const family of families.values()) problems.push(...lintFamily(family));
  return problems;
}

function parseExposition(text: string): { families: Map<string, Family>; problems: string[] } {
  const families = new Map<string, Family>();
  const problems: string[] = [];
  const seenSeries = new Set<string>();
  /** The family whose samples came last: a family's samples must not be split by another's. */
  let open: Family | undefined;
  const closed = new Set<Family>();
  const familyOf = (name: string) => {
    const family = families.get(name) ?? { name, samples: [] };
    families.set(name, family);
    return family;
  };
  text.split('\n').forEach((raw, index) => {
    const line = index + 1;
    if (raw.trim() === '') return;
    if (raw.startsWith('#')) {
      const problem = readComment(raw, line, familyOf);
      if (problem !== undefined) problems.push(problem);
      return;
    }
    const sample = readSample(raw, line, problems);
    if (sample === undefined) return;
    const family = familyOf(familyName(sample.name, families));
    if (family !== open) {
      if (open !== undefined) closed.add(open);
      if (closed.has(family)) problems.push(`line ${line}: the samples of ${family.name} are not together`);
      open = family;
    }
    if (family.samples.length === 0 && (family.help === undefined || family.type === undefined))
      problems.push(`line ${line}: ${family.name} has samples before its HELP and TYPE lines`);
    const series = `${sample.name}{${[...sample.labels].sort().join(',')}}`;
    if (seenSeries.has(series)) problems.push(`line ${line}: duplicate series ${series}`);
    seenSeries.add(series);
    family.samples.push(sample);
  });
  return { families, problems };
}

/** `# HELP name text` or `# TYPE name type`; any other comment is ignored. */
function readComment(raw: string, line: number, familyOf: (name: string) => Family): string | undefined {
  const match = /^#[ \t]+(HELP|TYPE)[ \t]+(\S+)(?:[ \t]+(.*))?$/.exec(raw);
  if (match === null) return undefined;
  const [, keyword, name = '', rest = ''] = match;
  if (!METRIC_NAME.test(name)) return `line ${line}: invalid metric name ${JSON.stringify(name)}`;
  const family = familyOf(name);
  if (family.samples.length > 0) return `line ${line}: ${keyword} of ${name} after its samples`;
  if (keyword === 'HELP') {
    if (family.help !== undefined) return `line ${line}: second HELP line for ${name}`;
    // Only `\\` and `\n` are escapes in a HELP text: any backslash left once they are gone is not.
    if (rest.replace(/\\[\\n]/g, '').includes('\\'))
      return `line ${line}: invalid escape in the HELP of ${name}`;
    family.help = rest;
    return undefined;
  }
  if (family.type !== undefined) return `line ${line}: second TYPE line for ${name}`;
  if (!TYPES.has(rest.trim())) return `line ${line}: unknown TYPE ${JSON.stringify(rest)} for ${name}`;
  family.type = rest.trim();
  return undefined;
}

/** `name{label="value",...} value [timestamp]`, scanned by hand: a label value may hold `}` or `,`. */
function readSample(raw: string, line: number, problems: string[]): Sample | undefined {
  const fail = (why: string) => {
    problems.push(`line ${line}: ${why}: ${raw}`);
    return undefined;
  };
  const nameEnd = raw.search(/[{ \t]/);
  const name = nameEnd === -1 ? raw : raw.slice(0, nameEnd);
  if (!METRIC_NAME.test(name)) return fail('invalid metric name');
  let at = name.length;
  const labels: [string, string][] = [];
  if (raw[at] === '{') {
    at++;
    while (raw[at] !== '}') {
      const label = /^[ \t]*([^=\s]*)[ \t]*="/.exec(raw.slice(at));
      if (label === null) return fail('a label is not name="value"');
      const labelName = label[1] ?? '';
      if (!LABEL_NAME.test(labelName) || labelName.startsWith('__'))
        return fail(`invalid label name ${JSON.stringify(labelName)}`);
      if (labels.some(([n]) => n === labelName)) return fail(`label ${labelName} twice`);
      at += label[0].length;
      let value = '';
      for (; at < raw.length && raw[at] !== '"'; at++) {
        if (raw[at] !== '\\') {
          value += raw[at];
          continue;
        }
        const escaped = ESCAPES[raw[at + 1] ?? ''];
        if (escaped === undefined) return fail(`invalid escape in the value of label ${labelName}`);
        value += escaped;
        at++;
      }
      if (at >= raw.length) return fail(`the value of label ${labelName} is not closed`);
      labels.push([labelName, value]);
      at = skipBlanks(raw, at + 1);
      if (raw[at] === ',') at = skipBlanks(raw, at + 1);
      else if (raw[at] !== '}') return fail('labels not separated by a comma');
    }
    at++;
  }
  const rest = raw.slice(at);
  if (!/^[ \t]/.test(rest)) return fail('no value');
  const [value = '', timestamp, ...extra] = rest.trim().split(/[ \t]+/);
  if (!FLOAT.test(value)) return fail(`value ${JSON.stringify(value)} is not a number`);
  if ((timestamp !== undefined && !TIMESTAMP.test(timestamp)) || extra.length > 0)
    return fail('text after the value and timestamp');
  return { name, labels, value: parseFloat(value.replace(/^([+-]?)inf(inity)?$/i, '$1Infinity')), line };
}

function skipBlanks(raw: string, at: number): number {
  while (raw[at] === ' ' || raw[at] === '\t') at++;
  return at;
}

/** As the text parser assigns samples: `x_bucket` to histogram x, `x_sum`/`x_count` to histogram or summary x. */
function familyName(sample: string, families: Map<string, Family>): string {
  for (const [suffix, types] of [
    ['_bucket', ['histogram']],
    ['_sum', ['histogram', 'summary']],
    ['_count', ['histogram', 'summary']],
  ] as const) {
    if (!sample.endsWith(suffix)) continue;
    const base = families.get(sample.slice(0, -suffix.length));
    if (base?.type !== undefined && (types as readonly string[]).includes(base.type)) return base.name;
  }
  return sample;
}

/** Base units promlint accepts, and what it says to use instead of the others. */
const UNITS: Record<string, string> = {
  amperes: 'amperes',
  bytes: 'bytes',
  celsius: 'celsius',
  grams: 'grams',
  joules: 'joules',
  kelvin: 'kelvin',
  meters: 'meters',
  metres: 'metres',
  seconds: 'seconds',
  volts: 'volts',
  minutes: 'seconds',
  hours: 'seconds',
  days: 'seconds',
  weeks: 'seconds',
  kelvins: 'kelvin',
  fahrenheit: 'celsius',
  rankine: 'celsius',
  inches: 'meters',
  yards: 'meters',
  miles: 'meters',
  bits: 'bytes',
  calories: 'joules',
  pounds: 'grams',
  ounces: 'grams',
};
const UNIT_PREFIXES =
  /^(pico|nano|micro|milli|centi|deci|deca|hecto|kilo|kibi|mega|mibi|giga|gibi|tera|tebi|peta|pebi)/;
const UNIT_ABBREVIATIONS = ['s', 'ms', 'us', 'ns', 'sec', 'b', 'kb', 'mb', 'gb', 'tb', 'pb', 'm', 'h', 'd'];
const TYPE_WORDS = ['counter', 'gauge', 'histogram', 'summary', 'gauge_histogram'];

/** promlint's rules on a family's name and labels, and each type's shape. */
function lintFamily(family: Family): string[] {
  const { name, type = 'untyped' } = family;
  const problems: string[] = [];
  const say = (why: string) => problems.push(`${name}: ${why}`);
  if (family.help === undefined) say('no help text');
  if (type === 'counter' && !name.endsWith('_total')) say('counter metrics should have "_total" suffix');
  if (type !== 'counter' && type !== 'untyped' && name.endsWith('_total'))
    say('non-counter metrics should not have "_total" suffix');
  if (/[a-z][A-Z]/.test(name)) say("metric names should be written in 'snake_case' not 'camelCase'");
  if (name.includes(':')) say("metric names should not contain ':'");
  const lower = name.toLowerCase();
  const has = (word: string) => lower.includes(`_${word}_`) || lower.endsWith(`_${word}`);
  for (const word of TYPE_WORDS) if (has(word)) say(`metric name should not include type '${word}'`);
  if (UNIT_ABBREVIATIONS.some(has)) say('metric names should not contain abbreviated units');
  for (const part of name.split('_')) {
    const unit = Object.hasOwn(UNITS, part) ? part : part.replace(UNIT_PREFIXES, '');
    const base = Object.hasOwn(UNITS, unit) ? UNITS[unit] : undefined;
    if (base !== undefined && (part !== base || unit !== part)) {
      say(`use base unit "${base}" instead of "${part}"`);
      break;
    }
    if (base !== undefined) break;
  }
  if (type !== 'untyped') problems.push(...lintReserved(family, type));
  const labelNames = new Set(family.samples.flatMap((s) => s.labels.map(([n]) => n)));
  if ([...labelNames].some((n) => /[a-z][A-Z]/.test(n)))
    say("label names should be written in 'snake_case' not 'camelCase'");
  if (type === 'counter' && family.samples.some((s) => s.value < 0)) say('a counter is negative');
  if (type === 'histogram') problems.push(...lintHistogram(family));
  else if (type === 'summary') problems.push(...lintSummary(family));
  else
    for (const s of family.samples)
      if (s.name !== name) problems.push(`line ${s.line}: ${s.name} is not a sample of ${type} ${name}`);
  return problems;
}

/** Names and labels that belong to histograms and summaries, used by another type. */
function lintReserved({ name, samples }: Family, type: string): string[] {
  const problems: string[] = [];
  const isHistogram = type === 'histogram';
  const isSummary = type === 'summary';
  if (!isHistogram && name.endsWith('_bucket'))
    problems.push(`${name}: non-histogram metrics should not have "_bucket" suffix`);
  for (const suffix of ['_count', '_sum'])
    if (!isHistogram && !isSummary && name.endsWith(suffix))
      problems.push(`${name}: non-histogram and non-summary metrics should not have "${suffix}" suffix`);
  const labels = new Set(samples.flatMap((s) => s.labels.map(([n]) => n)));
  if (!isHistogram && labels.has('le'))
    problems.push(`${name}: non-histogram metrics should not have "le" label`);
  if (!isSummary && labels.has('quantile'))
    problems.push(`${name}: non-summary metrics should not have "quantile" label`);
  return problems;
}

/** The labels of a sample other than `drop` (le, quantile), as a key: one series of the family. */
function seriesKey(sample: Sample, drop: string): string {
  return JSON.stringify(sample.labels.filter(([n]) => n !== drop).sort());
}

/** Per series: buckets by rising le, cumulative, ending at +Inf equal to _count; _sum and _count. */
function lintHistogram({ name, samples }: Family): string[] {
  const problems: string[] = [];
  const series = new Map<string, { buckets: [number, number][]; sum?: number; count?: number }>();
  for (const s of samples) {
    const le = s.labels.find(([n]) => n === 'le')?.[1];
    const entry = series.get(seriesKey(s, 'le')) ?? { buckets: [] };
    series.set(seriesKey(s, 'le'), entry);
    if (s.name === `${name}_bucket`) {
      if (le === undefined || !FLOAT.test(le))
        problems.push(`line ${s.line}: a bucket of ${name} without a valid le`);
      else entry.buckets.push([parseFloat(le.replace(/^\+?inf$/i, 'Infinity')), s.value]);
    } else if (s.name === `${name}_sum`) entry.sum = s.value;
    else if (s.name === `${name}_count`) entry.count = s.value;
    else problems.push(`line ${s.line}: ${s.name} is not a sample of histogram ${name}`);
  }
  for (const [key, { buckets, sum, count }] of series) {
    const where = `${name}${key === '[]' ? '' : ` ${key}`}`;
    if (sum === undefined) problems.push(`${where}: no _sum`);
    if (count === undefined) problems.push(`${where}: no _count`);
    const last = buckets.at(-1);
    if (last === undefined || last[0] !== Number.POSITIVE_INFINITY)
      problems.push(`${where}: no +Inf bucket last`);
    else if (count !== undefined && last[1] !== count)
      problems.push(`${where}: the +Inf bucket is not _count`);
    for (let i = 1; i < buckets.length; i++) {
      const [le, n] = buckets[i] as [number, number];
      const [prevLe, prevN] = buckets[i - 1] as [number, number];
      if (le <= prevLe) problems.push(`${where}: buckets not in rising le order at le=${le}`);
      if (n < prevN) problems.push(`${where}: buckets not cumulative at le=${le}`);
    }
  }
  return problems;
}

/** Per series: quantiles in [0, 1], a _sum and a _count. */
function lintSummary({ name, samples }: Family): string[] {
  const problems: string[] = [];
  const series = new Map<string, { sum: boolean; count: boolean }>();
  for (const s of samples) {
    const entry = series.get(seriesKey(s, 'quantile')) ?? { sum: false, count: false };
    series.set(seriesKey(s, 'quantile'), entry);
    const quantile = s.labels.find(([n]) => n === 'quantile')?.[1];
    if (s.name === name) {
      const q = quantile === undefined || !FLOAT.test(quantile) ? Number.NaN : Number(quantile);
      if (!(q >= 0 && q <= 1)) problems.push(`line ${s.line}: a quantile of ${name} not in [0, 1]`);
    } else if (s.name === `${name}_sum`) entry.sum = true;
    else if (s.name === `${name}_count`) entry.count = true;
    else problems.push(`line ${s.line}: ${s.name} is not a sample of summary ${name}`);
  }
  for (const [key, { sum, count }] of series)
    if (!sum || !count) problems.push(`${name} ${key}: no ${sum ? '_count' : '_sum'}`);
  return problems;
}
