import { describe, expect, it } from 'vitest';
import { verifyJson, verifyText } from '../../src/cli/verify-run.js';
import type { DayVerdict, VerifyResult } from '../../src/sync/verify.js';

const day = (extra: Partial<DayVerdict>): DayVerdict => ({
  source: 'default',
  resource: 'feedback',
  day: '2026-11-08',
  lacked: 0,
  changed: 0,
  gone: 0,
  moved: 0,
  status: 'done',
  truncated: false,
  requests: 1,
  settledBefore: true,
  ...extra,
});

function result(days: DayVerdict[]): VerifyResult {
  return {
    runs: [
      {
        runId: 3,
        status: 'ok',
        summary: {},
        windows: [],
        snapshots: [],
        error: null,
        durationMs: 10,
        requests: { default: { '200': 4 } },
      },
    ],
    days,
    held: new Set(),
  };
}

describe("verify's findings on the terminal and in JSON", () => {
  it('names a day it could read only in part: no difference found there is not a day proved whole', () => {
    const found = result([day({ truncated: true }), day({ day: '2026-11-09', resource: 'survey' })]);
    const text = verifyText(found, false, 200);
    expect(text).toContain('no differences');
    expect(text).toMatch(/read only in part \(truncated[^\n]*\): default\/feedback\/2026-11-08\n/);
    expect(text).not.toContain('2026-11-09');
    expect(verifyJson(found, { from: '2026-11-08', to: '2026-11-09' }, false).daysReadInPart).toEqual([
      { source: 'default', resource: 'feedback', day: '2026-11-08' },
    ]);
  });

  it('says nothing of days read in part when every day was read whole', () => {
    const text = verifyText(result([day({})]), false, 200);
    expect(text).not.toContain('read only in part');
    expect(text).toContain('totals: windows_verified=1 lacked=0 changed=0 gone=0 moved=0 requests=4');
  });
});
