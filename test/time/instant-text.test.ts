import { describe, expect, it } from 'vitest';
import { utcMinutes, utcSeconds } from '../../src/time/instant-text.js';

describe('an instant on a screen that says UTC', () => {
  it('reads as date and time of day, to the second', () => {
    expect(utcSeconds('2026-11-26T08:28:25.976Z')).toBe('2026-11-26 08:28:25');
    expect(utcSeconds('2026-11-26T08:28:25Z')).toBe('2026-11-26 08:28:25');
  });

  it('or to the minute', () => {
    expect(utcMinutes('2026-11-26T08:28:25.976Z')).toBe('2026-11-26 08:28');
  });
});
