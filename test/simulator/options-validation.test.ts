import { describe, expect, it } from 'vitest';
import type { SimulatorPatch } from '../../src/simulator/server.js';
import { withSimulator } from './sim-helpers.js';

// Bad values cast through `never`: the point is what a caller without types (JSON, a CLI) sends.
const BAD: Array<[string, SimulatorPatch]> = [
  ['startdate', { startdate: 'both' as never }],
  ['order', { order: 'by-id' as never }],
  ['caps', { caps: { heatmaps: 3 } as never }],
  ['caps', { caps: { feedback: 0 } }],
  ['caps', { caps: [] as never }],
  ['maxLimit', { maxLimit: 0 }],
  ['maxLimit', { maxLimit: 2.5 }],
  ['dayOffsetMinutes', { dayOffsetMinutes: 721 }],
  ['dayOffsetMinutes', { dayOffsetMinutes: -841 }],
  ['dayOffsetMinutes', { dayOffsetMinutes: 30.5 }],
  ['reuseIds', { reuseIds: 1.5 }],
  ['oddValueRate', { oddValueRate: -0.1 }],
  ['forbidden', { forbidden: ['feedbacks'] as never }],
  ['missing', { missing: 'survey' as never }],
  ['emptyAnswers', { emptyAnswers: { feedback: -1 } }],
  ['emptyAnswers', { emptyAnswers: { nowhere: 1 } as never }],
  ['snapshotEmptyRate', { snapshotEmptyRate: 1.5 }],
  ['malformedVariants', { malformedVariants: 'yes' as never }],
];

describe('validation of the gap options', () => {
  it.each(BAD)('setOptions rejects a bad %s with a RangeError naming it', async (name, patch) => {
    await withSimulator({}, async (simulator) => {
      expect(() => simulator.setOptions(patch)).toThrow(RangeError);
      expect(() => simulator.setOptions(patch)).toThrow(name);
    });
  });

  it('startSimulator rejects them too, and accepts the edges', async () => {
    await expect(withSimulator({ dayOffsetMinutes: 800 }, async () => undefined)).rejects.toThrow(
      /dayOffsetMinutes/,
    );
    await withSimulator(
      { dayOffsetMinutes: -840, maxLimit: 1, reuseIds: 1, oddValueRate: 1, order: 'random' },
      async (simulator) => {
        simulator.setOptions({ dayOffsetMinutes: 720, maxLimit: null, emptyAnswers: {}, caps: {} });
      },
    );
  });
});
