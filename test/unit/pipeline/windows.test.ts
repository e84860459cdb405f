import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { addDays, fromDayNumber, toDayNumber } from '../../../src/model/dates.js';
import { overlaps, sameWindow, type Window } from '../../../src/model/window.js';
import { cutWindows, gridStart, planWindows, uncovered } from '../../../src/pipeline/windows.js';

const dateArb = fc
  .integer({ min: toDayNumber('2015-01-01'), max: toDayNumber('2035-12-31') })
  .map(fromDayNumber);

/** A range of dates and a window size. */
const rangeArb = fc
  .tuple(dateArb, fc.integer({ min: 0, max: 400 }), fc.integer({ min: 1, max: 60 }))
  .map(([from, span, size]) => ({ from, to: addDays(from, span), size }));

/** Windows loaded on one grid, and windows wanted on another grid that overlaps them or not. */
const regridArb = fc
  .tuple(
    dateArb,
    fc.integer({ min: 1, max: 20 }),
    fc.integer({ min: 1, max: 20 }),
    fc.integer({ min: -40, max: 40 }),
    fc.integer({ min: 0, max: 60 }),
  )
  .map(([origin, oldSize, newSize, shift, span]) => {
    const from = addDays(origin, 20 + shift);
    return {
      loaded: cutWindows(origin, addDays(origin, 60), oldSize),
      wanted: cutWindows(from, addDays(from, span), newSize),
    };
  });

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
      fc.property(rangeArb, ({ from, to, size }) => {
        const windows = cutWindows(from, to, size);
        const covered = windows.flatMap(days);
        expect(covered).toEqual(days({ start: from, end: to }));
        for (const w of windows) expect(days(w).length).toBeLessThanOrEqual(size);
      }),
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

describe('gridStart', () => {
  it('is the first date of the one grid cell holding the date (property)', () => {
    fc.assert(
      fc.property(dateArb, fc.integer({ min: 1, max: 366 }), (date, size) => {
        const start = gridStart(date, size);
        expect(start <= date).toBe(true);
        expect(date < addDays(start, size)).toBe(true);
        // Every date of the cell has the same start; the next cell starts right after it.
        expect(gridStart(start, size)).toBe(start);
        expect(gridStart(addDays(start, size - 1), size)).toBe(start);
        expect(gridStart(addDays(start, size), size)).toBe(addDays(start, size));
      }),
    );
  });

  it('starts 7-day cells on Mondays (ISO weeks), whatever the date (property)', () => {
    fc.assert(
      fc.property(dateArb, (date) => {
        expect(new Date(`${gridStart(date, 7)}T00:00:00Z`).getUTCDay()).toBe(1);
      }),
    );
  });
});

describe('cutWindows on the grid', () => {
  it('cuts only at grid boundaries: one window per cell the range touches, full inside (property)', () => {
    fc.assert(
      fc.property(rangeArb, ({ from, to, size }) => {
        const windows = cutWindows(from, to, size);
        expect(windows[0]?.start).toBe(from);
        expect(windows.at(-1)?.end).toBe(to);
        const cells = new Set(days({ start: from, end: to }).map((d) => gridStart(d, size)));
        expect(windows).toHaveLength(cells.size);
        windows.forEach((w, i) => {
          // Each window lies within one cell...
          expect(gridStart(w.end, size)).toBe(gridStart(w.start, size));
          // ...begins one unless it is the first, ends one unless it is the last...
          if (i > 0) expect(gridStart(w.start, size)).toBe(w.start);
          if (i < windows.length - 1) expect(gridStart(addDays(w.end, 1), size)).toBe(addDays(w.end, 1));
          // ...and so is the whole cell when it is neither.
          if (i > 0 && i < windows.length - 1) expect(days(w)).toHaveLength(size);
        });
      }),
    );
  });

  it('gives the same windows for a range as for its pieces cut at a grid boundary (property)', () => {
    fc.assert(
      fc.property(
        dateArb,
        fc.integer({ min: 0, max: 200 }),
        fc.integer({ min: 0, max: 200 }),
        fc.integer({ min: 1, max: 60 }),
        (middle, before, after, size) => {
          const cut = gridStart(middle, size);
          const from = addDays(cut, -before - 1);
          const to = addDays(cut, after);
          expect([...cutWindows(from, addDays(cut, -1), size), ...cutWindows(cut, to, size)]).toEqual(
            cutWindows(from, to, size),
          );
        },
      ),
    );
  });
});

describe('uncovered', () => {
  it('returns exactly the dates of the outer window that no window covers, as maximal runs (property)', () => {
    const windowArb = fc
      .tuple(fc.integer({ min: 0, max: 60 }), fc.integer({ min: 0, max: 20 }))
      .map(([offset, span]) => ({
        start: addDays('2026-01-01', offset),
        end: addDays('2026-01-01', offset + span),
      }));
    fc.assert(
      fc.property(windowArb, fc.array(windowArb, { maxLength: 6 }), (outer, cover) => {
        const pieces = uncovered(outer, cover);
        const free = days(outer).filter((d) => !cover.some((w) => w.start <= d && d <= w.end));
        expect(pieces.flatMap(days)).toEqual(free);
        // Maximal: two pieces never touch.
        for (let i = 1; i < pieces.length; i++) {
          expect(addDays(pieces[i - 1]?.end ?? '', 1) < (pieces[i]?.start ?? '')).toBe(true);
        }
      }),
    );
  });

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
  it('skips exactly the wanted windows already loaded as they are, and plans every other one (property)', () => {
    fc.assert(
      fc.property(regridArb, fc.boolean(), ({ loaded, wanted }, reload) => {
        const plan = planWindows(wanted, loaded, { reload });
        const planned = plan.groups.flat();
        const isLoaded = (w: Window) => loaded.some((l) => sameWindow(l, w));
        expect(plan.skipped).toEqual(reload ? [] : wanted.filter(isLoaded));
        for (const w of wanted) {
          const inPlan = planned.some((p) => sameWindow(p, w));
          expect(inPlan).toBe(reload || !isLoaded(w));
        }
        // A skipped window is never touched by the windows planned around it.
        for (const s of plan.skipped) expect(planned.some((p) => overlaps(p, s))).toBe(false);
        for (const group of plan.groups) expect(group.length).toBeGreaterThan(0);
      }),
      { numRuns: 200 },
    );
  });

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
      fc.property(regridArb, ({ loaded, wanted }) => {
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
      }),
      { numRuns: 200 },
    );
  });
});
