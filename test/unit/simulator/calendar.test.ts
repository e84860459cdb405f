import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { formatDay, parseDay } from '../../../src/simulator/calendar.js';

describe('calendar', () => {
  it('agrees with Date for every day in years 1..9999', () => {
    fc.assert(
      fc.property(fc.integer({ min: -719_162, max: 2_932_896 }), (day) => {
        const text = new Date(day * 86_400_000).toISOString().slice(0, 10);
        expect(formatDay(day)).toBe(text);
        expect(parseDay(text)).toBe(day);
      }),
      { numRuns: 2_000 },
    );
  });

  it('refuses texts that are not real dates', () => {
    for (const text of [
      '2026-02-29',
      '2026-13-01',
      '2026-00-10',
      '2026-04-31',
      '2026-1-01',
      ' 2026-01-01',
      '0000-01-01',
      '',
    ]) {
      expect(parseDay(text), text).toBeNull();
    }
    expect(parseDay('2024-02-29')).not.toBeNull();
    expect(parseDay('1970-01-01')).toBe(0);
  });
});
