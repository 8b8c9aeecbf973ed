import { describe, expect, it } from 'vitest';
import { windowPriority } from '../../src/queue/window-queue.js';

describe('queued windows', () => {
  it("a verify's wait behind every sync's, as a backfill's do", () => {
    const syncs = ['2026-01-01', '2026-06-30'].map((day) => windowPriority('schedule', day));
    const verify = windowPriority('verify', '2026-06-30');
    expect(verify).toBe(windowPriority('backfill', '2026-06-30'));
    expect(verify).toBeLessThan(Math.min(...syncs));
  });
});
