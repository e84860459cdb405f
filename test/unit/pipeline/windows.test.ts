import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { addDays, fromDayNumber, toDayNumber } from '../../../src/pipeline/dates.js';
import { cutWindows, overlaps, planWindows, uncovered, type Window } from '../../../src/pipeline/windows.js';

const dateArb = fc
  .integer({ min: toDayNumber('2015-01-01'), max: toDayNumber('2035-12-31') })
  .map(fromDayNumber);

function days(w: Window): string[] {
  const out: string[] = [];
  for (let d = w.start; d <= w.end; d = addDays(d, 1)) out.push(d);
  return out;
}

describe('cutWindows', () => {
  it('aligns 7-day windows to ISO weeks and clips the ends', () => {
    expect(cutWindows('2026-03-04', '2026-03-20', 7)).toEqual([
      { start: '2026-03-04', end: '2026-03-08' },
      { start: '2026-03-09', end: '2026-03-15' },
      { start: '2026-03-16', end: '2026-03-20' },
    ]);
  });

  it('gives one window for a single day', () => {
    expect(cutWindows('2026-01-01', '2026-01-01', 30)).toEqual([{ start: '2026-01-01', end: '2026-01-01' }]);
  });

  it('covers every date of the range exactly once, in order, within the size (property)', () => {
    fc.assert(
      fc.property(
        dateArb,
        fc.integer({ min: 0, max: 400 }),
        fc.integer({ min: 1, max: 60 }),
        (from, span, size) => {
          const to = addDays(from, span);
          const windows = cutWindows(from, to, size);
          const covered = windows.flatMap(days);
          expect(covered).toEqual(days({ start: from, end: to }));
          for (const w of windows) expect(days(w).length).toBeLessThanOrEqual(size);
        },
      ),
    );
  });

  it('puts a date in the same window whatever the range start (property)', () => {
    fc.assert(
      fc.property(
        dateArb,
        fc.integer({ min: 1, max: 30 }),
        fc.integer({ min: 1, max: 60 }),
        (date, before, size) => {
          const a = cutWindows(addDays(date, -before - 100), addDays(date, 100), size).find(
            (w) => w.start <= date && date <= w.end,
          );
          const b = cutWindows(addDays(date, -before), addDays(date, 100), size).find(
            (w) => w.start <= date && date <= w.end,
          );
          expect(a?.end).toBe(b?.end);
          // b may be clipped at its start by the range; a grid cell never is far from the range start.
          if (b && b.start !== addDays(date, -before)) expect(a?.start).toBe(b.start);
        },
      ),
    );
  });
});

describe('uncovered', () => {
  it('returns the runs of dates no window covers', () => {
    expect(
      uncovered({ start: '2026-01-01', end: '2026-01-10' }, [
        { start: '2026-01-03', end: '2026-01-04' },
        { start: '2026-01-08', end: '2026-01-20' },
      ]),
    ).toEqual([
      { start: '2026-01-01', end: '2026-01-02' },
      { start: '2026-01-05', end: '2026-01-07' },
    ]);
  });
});

describe('planWindows', () => {
  it('skips windows already loaded unless reloading', () => {
    const w = { start: '2026-01-05', end: '2026-01-11' };
    expect(planWindows([w], [w], { reload: false })).toEqual({ groups: [], skipped: [w] });
    expect(planWindows([w], [w], { reload: true })).toEqual({ groups: [[w]], skipped: [] });
  });

  it('groups new windows that replace one old window together, adding what sticks out', () => {
    const old = { start: '2026-01-05', end: '2026-01-18' }; // a 14-day window
    const wanted = cutWindows('2026-01-05', '2026-01-11', 7);
    const plan = planWindows(wanted, [old], { reload: false });
    expect(plan.groups).toEqual([
      [
        { start: '2026-01-05', end: '2026-01-11' },
        { start: '2026-01-12', end: '2026-01-18' },
      ],
    ]);
  });

  it('never leaves a date of a replaced window uncovered, nor covers one twice (property)', () => {
    fc.assert(
      fc.property(
        dateArb,
        fc.integer({ min: 1, max: 20 }),
        fc.integer({ min: 1, max: 20 }),
        fc.integer({ min: -40, max: 40 }),
        fc.integer({ min: 0, max: 60 }),
        (origin, oldSize, newSize, shift, span) => {
          const loaded = cutWindows(origin, addDays(origin, 60), oldSize);
          const from = addDays(origin, 20 + shift);
          const wanted = cutWindows(from, addDays(from, span), newSize);
          const plan = planWindows(wanted, loaded, { reload: true });
          const planned = plan.groups.flat();
          // no date planned twice
          const dates = planned.flatMap(days);
          expect(new Set(dates).size).toBe(dates.length);
          // every wanted date planned
          for (const w of wanted) for (const d of days(w)) expect(dates).toContain(d);
          // every old window touched is entirely covered by its own group
          for (const old of loaded) {
            const group = plan.groups.find((g) => g.some((w) => overlaps(w, old)));
            if (group) expect(uncovered(old, group)).toEqual([]);
          }
        },
      ),
      { numRuns: 200 },
    );
  });
});
