import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { toYaml, type YamlValue } from '../../src/dbt/yaml-text.js';

/** Strings a careless serializer turns into something else: numbers, booleans, null, comments, keys. */
const TRICKY = [
  '',
  ' ',
  '  leading and trailing  ',
  'yes',
  'No',
  'on',
  'OFF',
  'y',
  'null',
  '~',
  'true',
  '1',
  '0x1F',
  '1e3',
  '.inf',
  '-.5',
  '2026-03-01',
  '12:30',
  'a: b',
  'key:',
  '- item',
  '# not a comment',
  'trailing #hash',
  '"double" and \'single\'',
  'back\\slash',
  'line\nbreak\r\nand\ttab',
  '{ flow: map }',
  '[flow, seq]',
  '&anchor *alias !tag | > % @ `',
  '\u0000\u0007\u001b\u007f\u0085\u009f',
  'separators \u2028 and \u2029',
  '\ufeffbyte order mark',
  'émoji 😀 and 中文',
  "Visitor's answer (spec 2.4; the webhook calls it answer); may be empty.",
];

const roundTrips = (value: YamlValue) => {
  const text = toYaml(value);
  // YAML 1.2 (the yaml package's default) and 1.1, which PyYAML, and so dbt, reads.
  expect(parse(text)).toEqual(value);
  expect(parse(text, { version: '1.1' })).toEqual(value);
};

describe('toYaml', () => {
  it.each(TRICKY)('a string stays that string, under YAML 1.2 and 1.1: %j', (text) => {
    roundTrips(text);
    roundTrips({ key: text, list: [text, { nested: text }] });
  });

  it('keys that are not plain identifiers, or that YAML 1.1 reads as booleans, are quoted and kept', () => {
    roundTrips({ yes: 1, no: 2, on: 3, 'with space': 4, '1': 5, 'a:b': 6, '': 7, plain_key: 8 });
  });

  it('nested lists and maps, empty ones, numbers, booleans and null keep their shape', () => {
    roundTrips({
      version: 2,
      sources: [
        {
          name: 'insights',
          freshness: { warn_after: { count: 26, period: 'hour' } },
          tables: [
            {
              name: 't',
              freshness: null,
              data_tests: [{ unique: { column_name: 'row(a, b)' } }],
              columns: [],
            },
            {
              name: 'u',
              meta: {},
              flags: [true, false, 0, -1.5],
              columns: [{ name: 'c', data_tests: ['not_null'] }],
            },
          ],
        },
      ],
      lists: [[1, [2, []]], [], [{}]],
    });
  });

  it('refuses what YAML cannot say as a number', () => {
    expect(() => toYaml({ n: Number.NaN })).toThrow(RangeError);
    expect(() => toYaml([Number.POSITIVE_INFINITY])).toThrow(RangeError);
  });
});
