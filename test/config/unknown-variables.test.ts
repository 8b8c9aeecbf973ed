import { describe, expect, it } from 'vitest';
import {
  describeUnknown,
  editDistance,
  KNOWN_INSIGHTS_VARIABLES,
  unknownVariables,
} from '../../src/config/unknown-variables.js';

describe('unknown INSIGHTS_ variables', () => {
  it('are the INSIGHTS_ names nothing reads, each with the known name fewest edits away', () => {
    expect(
      unknownVariables({
        INSIGHTS_API_KEY: 'k',
        INSIGHTS_LOOKBACK_DAY: '3',
        INSIGHTS_SOURCE_RSP: '2',
        INSIGHTS_APIURL: 'http://x',
        PATH: '/bin',
        INSIGHTS_SCHEDULE: '0 3 * * *',
      }),
    ).toEqual([
      { name: 'INSIGHTS_APIURL', closest: 'INSIGHTS_API_URL' },
      { name: 'INSIGHTS_LOOKBACK_DAY', closest: 'INSIGHTS_LOOKBACK_DAYS' },
      { name: 'INSIGHTS_SOURCE_RSP', closest: 'INSIGHTS_SOURCE_RPS' },
    ]);
  });

  it('also name a variable a typo away from DATABASE_URL, LOG_LEVEL or LOG_FORMAT, and no other', () => {
    expect(
      unknownVariables({
        DATABSE_URL: 'postgres://x',
        DATABASE_URL: 'postgres://y',
        LOG_LEVL: 'debug',
        LOGFORMAT: 'json',
        TEST_DATABASE_URL: 'postgres://z',
        LOGNAME: 'me',
        HOME: '/home/me',
        LANG: 'C',
      }),
    ).toEqual([
      { name: 'DATABSE_URL', closest: 'DATABASE_URL' },
      { name: 'LOGFORMAT', closest: 'LOG_FORMAT' },
      { name: 'LOG_LEVL', closest: 'LOG_LEVEL' },
    ]);
    expect(describeUnknown({ name: 'DATABSE_URL', closest: 'DATABASE_URL' })).toBe(
      'DATABSE_URL is not a setting of insights-sync and is ignored: did you mean DATABASE_URL?',
    );
  });

  it('know every setting, the source variables and the docker set-up passwords', () => {
    for (const name of [
      'INSIGHTS_CONCURRENCY',
      'INSIGHTS_PII_KEY',
      'INSIGHTS_CONFIG',
      'INSIGHTS_OWNER_PASSWORD',
    ])
      expect(KNOWN_INSIGHTS_VARIABLES).toContain(name);
  });

  it('edit distance counts insertions, deletions and substitutions', () => {
    expect(editDistance('', 'abc')).toBe(3);
    expect(editDistance('kitten', 'sitting')).toBe(3);
    expect(editDistance('same', 'same')).toBe(0);
  });
});
