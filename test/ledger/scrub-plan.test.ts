import { describe, expect, it } from 'vitest';
import {
  CLOSING_PROOF_ASKS,
  closingReserve,
  mayStartWindow,
  scrubPeriodNights,
  scrubSlice,
  VERIFY_COST,
} from '../../src/ledger/scrub-plan.js';
import type { ScrubCandidate } from '../../src/ledger/verified.js';

const at = (iso: string | null) => (iso === null ? null : new Date(iso));
const day = (
  day: string,
  lastVerifiedAt: string | null,
  resource: ScrubCandidate['resource'] = 'feedback',
  source = 'main',
): ScrubCandidate => ({ source, resource, day, lastVerifiedAt: at(lastVerifiedAt) });
const names = (picked: readonly ScrubCandidate[]) => picked.map((c) => `${c.source}/${c.resource}/${c.day}`);
/** Requests that pay for n windows of one resource, after the reserve of two runs. */
const paying = (n: number, resources = 1) =>
  2 * resources * VERIFY_COST.perResourceRun + n * VERIFY_COST.perWindow;

describe("the scrub's choice of days", () => {
  it('takes the never verified first, then the least recently verified, then the oldest day', () => {
    const candidates = [
      day('2026-01-05', '2026-03-01T03:00:00Z'),
      day('2026-01-03', null),
      day('2026-01-01', '2026-03-02T03:00:00Z'),
      day('2026-01-04', null),
      day('2026-01-02', '2026-02-20T03:00:00Z'),
    ];
    expect(names(scrubSlice(candidates, new Map([['main', paying(4)]])))).toEqual([
      'main/feedback/2026-01-03',
      'main/feedback/2026-01-04',
      'main/feedback/2026-01-02',
      'main/feedback/2026-01-05',
    ]);
  });

  it("gives each source what its own budget pays for, after the reserve of the verify's runs", () => {
    const candidates = [
      ...['2026-01-01', '2026-01-02', '2026-01-03'].map((d) => day(d, null, 'feedback', 'a')),
      ...['2026-01-01', '2026-01-02', '2026-01-03'].map((d) => day(d, null, 'survey', 'b')),
    ];
    const picked = scrubSlice(
      candidates,
      new Map([
        ['a', paying(2)],
        ['b', paying(1)],
      ]),
    );
    expect(names(picked)).toEqual(['a/feedback/2026-01-01', 'a/feedback/2026-01-02', 'b/survey/2026-01-01']);
  });

  it('takes nothing where the sync left less than the reserve, or nothing at all', () => {
    const candidates = [day('2026-01-01', null), day('2026-01-02', null, 'feedback', 'other')];
    expect(scrubSlice(candidates, new Map([['main', paying(0)]]))).toEqual([]);
    expect(scrubSlice(candidates, new Map([['main', -5]]))).toEqual([]);
    // A source the budget does not name gets nothing.
    expect(names(scrubSlice(candidates, new Map([['main', paying(5)]])))).toEqual([
      'main/feedback/2026-01-01',
    ]);
  });

  it('verifies a two-year warehouse in 21 nights at the default budget, one source or fifty', () => {
    // 730 days, 3 resources; a nightly sync of about 40 requests per source leaves 160 of 200,
    // 136 after the reserve of two runs: 108 windows a night, 3 of them the day that left the
    // lookback. Sources are budgeted apart: fifty take as many nights, at fifty times the requests.
    expect(scrubPeriodNights(730 * 3, 200, 40, 3)).toBe(
      Math.ceil((730 * 3) / (Math.floor((200 - 40 - 24) / 1.25) - 3)),
    );
    expect(scrubPeriodNights(730 * 3, 200, 40, 3)).toBe(21);
    expect(scrubPeriodNights(90 * 3, 200, 40, 3)).toBe(3);
    expect(scrubPeriodNights(10, 40, 40, 3)).toBeNull();
  });
});

describe("the scrub's hard stop", () => {
  it('starts a window only while what was sent and the last proofs stay below what was left', () => {
    expect(closingReserve(3)).toBe(3 * CLOSING_PROOF_ASKS);
    expect(mayStartWindow(0, 10, 9)).toBe(true);
    expect(mayStartWindow(1, 10, 9)).toBe(false);
    expect(mayStartWindow(90, 100, 9)).toBe(true);
    expect(mayStartWindow(91, 100, 9)).toBe(false);
    // Nothing left, or less than the reserve: nothing starts.
    expect(mayStartWindow(0, 0, 0)).toBe(false);
    expect(mayStartWindow(0, 5, 9)).toBe(false);
  });
});
