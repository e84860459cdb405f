/*
 * The soak's own grid (test/soak/spec-grid.ts), as the README states it, worked out by hand for a few ranges; and
 * the connector's windows agree with it over many.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { cutWindows } from '../../../src/pipeline/windows.js';
import { gridProblems, specWindows } from '../../soak/spec-grid.js';

describe("the soak's grid, from the README", () => {
  it('cuts ranges into weeks from Monday, and 3 and 14 days counted from Monday 1970-01-05', () => {
    expect(specWindows('2025-01-01', '2025-01-20', 7)).toEqual([
      { start: '2025-01-01', end: '2025-01-05' },
      { start: '2025-01-06', end: '2025-01-12' },
      { start: '2025-01-13', end: '2025-01-19' },
      { start: '2025-01-20', end: '2025-01-20' },
    ]);
    // 2025-01-01 is 20,085 days after 1970-01-05: a multiple of 3.
    expect(specWindows('2025-01-02', '2025-01-10', 3)).toEqual([
      { start: '2025-01-02', end: '2025-01-03' },
      { start: '2025-01-04', end: '2025-01-06' },
      { start: '2025-01-07', end: '2025-01-09' },
      { start: '2025-01-10', end: '2025-01-10' },
    ]);
    // 2025-01-06 is 20,090 days after it: a multiple of 14.
    expect(specWindows('2025-01-01', '2025-01-25', 14)).toEqual([
      { start: '2025-01-01', end: '2025-01-05' },
      { start: '2025-01-06', end: '2025-01-19' },
      { start: '2025-01-20', end: '2025-01-25' },
    ]);
    expect(specWindows('2025-03-04', '2025-03-04', 7)).toEqual([{ start: '2025-03-04', end: '2025-03-04' }]);
  });

  it('names each window where a cut differs from it', () => {
    const shifted = [
      { start: '2025-01-01', end: '2025-01-07' },
      { start: '2025-01-08', end: '2025-01-14' },
    ];
    expect(gridProblems('2025-01-01', '2025-01-14', 7, shifted)).toEqual([
      "window 1 of 2025-01-01..2025-01-14 (7 days): the README's grid has 2025-01-01..2025-01-05, the connector cuts 2025-01-01..2025-01-07",
      "window 2 of 2025-01-01..2025-01-14 (7 days): the README's grid has 2025-01-06..2025-01-12, the connector cuts 2025-01-08..2025-01-14",
      "window 3 of 2025-01-01..2025-01-14 (7 days): the README's grid has 2025-01-13..2025-01-14, the connector cuts (none)",
    ]);
  });

  it("agrees with the connector's windows over ranges of every length and window size", () => {
    const day = fc
      .integer({ min: 0, max: 3_000 })
      .map((n) => new Date(Date.UTC(2020, 0, 1) + n * 86_400_000).toISOString().slice(0, 10));
    fc.assert(
      fc.property(
        day,
        fc.integer({ min: 0, max: 120 }),
        fc.integer({ min: 1, max: 31 }),
        (from, length, size) => {
          const to = new Date(Date.parse(`${from}T00:00:00Z`) + length * 86_400_000)
            .toISOString()
            .slice(0, 10);
          expect(gridProblems(from, to, size, cutWindows(from, to, size))).toEqual([]);
        },
      ),
      { numRuns: 500 },
    );
  });
});
