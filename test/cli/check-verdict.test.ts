import { describe, expect, it } from 'vitest';
import type { CheckRow } from '../../src/check/check-run.js';
import { checkVerdict } from '../../src/cli/check.js';

const ok: CheckRow = { check: 'database', subject: 'reach', status: 'ok', detail: 'connected', code: 0 };
const warning: CheckRow = {
  check: 'configuration',
  subject: 'DATABSE_URL',
  status: 'warning',
  detail: 'DATABSE_URL is not a setting of insights-sync and is ignored: did you mean DATABASE_URL?',
  code: 0,
};
const failed: CheckRow = { check: 'api key', subject: 'main', status: 'failed', detail: 'rejected', code: 3 };

describe('the line under the checks', () => {
  it('says "all checks passed" only when every row passed', () => {
    expect(checkVerdict({ ok: true, exitCode: 0, checks: [ok, ok] })).toBe('all checks passed');
  });

  it('counts the warnings of a check that passed with them', () => {
    expect(checkVerdict({ ok: true, exitCode: 0, checks: [ok, warning] })).toBe(
      'checks passed with 1 warning',
    );
    expect(checkVerdict({ ok: true, exitCode: 0, checks: [warning, ok, warning] })).toBe(
      'checks passed with 2 warnings',
    );
  });

  it('gives the exit code of a failure, and the warnings beside it', () => {
    expect(checkVerdict({ ok: false, exitCode: 3, checks: [failed, warning] })).toBe(
      'some checks failed (exit code 3); 1 warning',
    );
  });
});
