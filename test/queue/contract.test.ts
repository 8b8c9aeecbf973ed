import { describe, expect, it } from 'vitest';
import { firstOfEachEndpoint, type PlannedWindow } from '../../src/queue/contract.js';

const plan = (source: string, resource: PlannedWindow['resource'], day: string): PlannedWindow => ({
  handle: { name: source },
  resource,
  day,
  startDay: day,
});

describe('the planned windows of a run', () => {
  it('the first window of each source and resource, in the plan order, once each', () => {
    const plans = [
      plan('a', 'feedback', '2026-03-02'),
      plan('a', 'survey', '2026-03-02'),
      plan('a', 'feedback', '2026-03-01'),
      plan('b', 'feedback', '2026-03-02'),
      plan('a', 'survey', '2026-03-01'),
    ];
    expect(firstOfEachEndpoint(plans)).toEqual([plans[0], plans[1], plans[3]]);
    expect(firstOfEachEndpoint([])).toEqual([]);
  });

  it('a source named like another with the resource glued on is still its own', () => {
    const plans = [plan('a', 'feedback', '2026-03-01'), plan('afeedback', 'feedback', '2026-03-01')];
    expect(firstOfEachEndpoint(plans)).toHaveLength(2);
  });
});
