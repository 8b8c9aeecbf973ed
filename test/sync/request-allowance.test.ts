/**
 * The scrub's allowance and the order its verify reads in: pure, no server, no database. Against
 * the simulator: test/sync/scrub-budget.test.ts.
 */
import { describe, expect, it } from 'vitest';
import { closingReserve } from '../../src/ledger/scrub-plan.js';
import { windowKey } from '../../src/ledger/verified.js';
import { RequestAllowance } from '../../src/sync/request-allowance.js';
import { inOrderOf } from '../../src/sync/run-sync.js';
import { resourcesPerSource } from '../../src/sync/scrub.js';

describe('the request allowance', () => {
  it('counts per source and closes a source once its sends and the reserve reach what was left', () => {
    const allowance = new RequestAllowance(
      new Map([
        ['a', closingReserve(2) + 3],
        ['b', 100],
      ]),
      new Map([
        ['a', 2],
        ['b', 1],
      ]),
    );
    for (let i = 0; i < 2; i++) allowance.count('a');
    expect(allowance.mayStart('a')).toBe(true);
    allowance.count('a');
    expect(allowance.sent('a')).toBe(3);
    expect(allowance.mayStart('a')).toBe(false);
    // Another source's count is its own.
    expect(allowance.sent('b')).toBe(0);
    expect(allowance.mayStart('b')).toBe(true);
    // A source it does not name starts nothing.
    expect(allowance.mayStart('c')).toBe(false);
  });

  it('keeps the windows it held back', () => {
    const allowance = new RequestAllowance(new Map(), new Map());
    allowance.hold('a', 'feedback', '2026-01-02');
    allowance.hold('a', 'feedback', '2026-01-02');
    expect([...allowance.held]).toEqual([windowKey('a', 'feedback', '2026-01-02')]);
  });
});

describe("the verify's order under an allowance", () => {
  const plan = (day: string, resource = 'feedback', name = 'main') => ({ handle: { name }, resource, day });
  const days = (plans: readonly ReturnType<typeof plan>[]) => plans.map((p) => `${p.resource} ${p.day}`);

  it("reads the windows in the caller's order, the ones it does not name last", () => {
    const plans = [plan('2026-01-01'), plan('2026-01-02'), plan('2026-01-03'), plan('2026-01-01', 'survey')];
    const order = new Set([
      windowKey('main', 'feedback', '2026-01-03'),
      windowKey('main', 'survey', '2026-01-01'),
      windowKey('main', 'feedback', '2026-01-01'),
    ]);
    expect(days(inOrderOf(plans, order))).toEqual([
      'feedback 2026-01-03',
      'survey 2026-01-01',
      'feedback 2026-01-01',
      'feedback 2026-01-02',
    ]);
    expect(days(inOrderOf(plans, undefined))).toEqual(days(plans));
  });

  it('reserves for the resources each source reads', () => {
    const at = null;
    expect(
      resourcesPerSource([
        { source: 'a', resource: 'feedback', day: '2026-01-01', lastVerifiedAt: at },
        { source: 'a', resource: 'feedback', day: '2026-01-02', lastVerifiedAt: at },
        { source: 'a', resource: 'survey', day: '2026-01-01', lastVerifiedAt: at },
        { source: 'b', resource: 'recordings', day: '2026-01-01', lastVerifiedAt: at },
      ]),
    ).toEqual(
      new Map([
        ['a', 2],
        ['b', 1],
      ]),
    );
  });
});
