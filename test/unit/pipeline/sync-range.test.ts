import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { RunConfig } from '../../../src/config.js';
import { addDays, fromDayNumber, toDayNumber } from '../../../src/model/dates.js';
import { syncRange } from '../../../src/pipeline/sync.js';

function run(startDate?: string, lookbackDays = 3): RunConfig {
  return {
    windowDays: 7,
    concurrency: 1,
    lookbackDays,
    startDate,
    windowAttempts: 1,
    stallTimeoutMs: 1000,
    heapGrowthPercent: 0,
    semiSpaceMb: 0,
    oldSpaceMb: 0,
    filters: {},
  };
}

const TODAY = '2026-11-23'; // a Monday

describe('syncRange', () => {
  it('loads the first sync, and a reset, from the start date; neither runs without one', () => {
    const first = syncRange(run('2026-09-01'), { cursor: null, firstLoaded: null }, TODAY, false);
    expect(first).toMatchObject({ from: '2026-09-01', to: TODAY, reload: true });
    expect(() => syncRange(run(), { cursor: null, firstLoaded: null }, TODAY, false)).toThrow(
      /first sync needs a start date/,
    );
    expect(() => syncRange(run(), { cursor: null, firstLoaded: null }, TODAY, true)).toThrow(
      /--reset starts over from the start date: pass --start-date/,
    );
  });

  it('reloads the lookback from the start of its grid window, never before the loaded history', () => {
    const later = syncRange(run(), { cursor: '2026-11-20', firstLoaded: '2026-09-01' }, TODAY, false);
    expect(later).toMatchObject({ from: '2026-11-16', reloadFrom: '2026-11-16', reload: false });
    // A history that began on a Wednesday: the grid's Monday is not loaded.
    const young = syncRange(run(), { cursor: '2026-11-19', firstLoaded: '2026-11-18' }, TODAY, false);
    expect(young).toMatchObject({ from: '2026-11-18', reloadFrom: '2026-11-18' });
  });

  it('extends the range to a start date before the loaded history, reloading only the lookback', () => {
    const range = syncRange(
      run('2026-10-01'),
      { cursor: '2026-11-23', firstLoaded: '2026-09-15' },
      TODAY,
      false,
    );
    // Inside the history: already met.
    expect(range).toMatchObject({ from: '2026-11-16', reloadFrom: '2026-11-16' });
    const back = syncRange(
      run('2026-08-01'),
      { cursor: '2026-11-23', firstLoaded: '2026-09-15' },
      TODAY,
      false,
    );
    expect(back).toMatchObject({ from: '2026-08-01', reloadFrom: '2026-11-16', reload: false });
    expect(back.notice).toBeUndefined();
  });

  it('says so when a start date after the lookback does not apply', () => {
    const range = syncRange(
      run('2026-11-10'),
      { cursor: '2026-10-15', firstLoaded: '2026-09-01' },
      TODAY,
      false,
    );
    expect(range.from).toBe('2026-10-12');
    expect(range.notice).toMatch(
      /start date 2026-11-10 .* bounds only the first sync; loading from 2026-10-12/,
    );
  });

  it('never leaves a gap after the cursor, whatever the start date (property)', () => {
    const day = fc.integer({ min: toDayNumber('2026-01-01'), max: toDayNumber('2026-12-31') });
    fc.assert(
      fc.property(day, day, fc.option(day), fc.integer({ min: 0, max: 20 }), (c, f, s, lookback) => {
        const cursor = fromDayNumber(c);
        const firstLoaded = fromDayNumber(Math.min(c, f));
        const today = addDays(cursor, 5);
        const startDate = s === null ? undefined : fromDayNumber(s);
        const range = syncRange(run(startDate, lookback), { cursor, firstLoaded }, today, false);
        expect(range.from <= addDays(cursor, 1)).toBe(true);
        expect(range.reloadFrom! <= addDays(cursor, 1)).toBe(true);
        expect(range.to).toBe(today);
      }),
    );
  });
});
