import type pg from 'pg';
import { readWindowDays, type WindowDay } from '../load/calendar-queries.js';
import { windowClaimHolders } from '../load/locks.js';
import type { Window } from '../model/window.js';
import { standingOf, type WindowStanding } from './schema-status.js';

/*
 * Each organization's loaded history as days, for a picture of it: what a person needs to know of a day is
 * whether its rows are final, loaded while the day was not over (open: the next run covering it loads it again),
 * failed, being loaded now, or never loaded.
 */

/** A day's state, in the order a legend lists them. */
export const DAY_STATES = ['final', 'open', 'failed', 'in progress', 'never loaded'] as const;
export type DayState = (typeof DAY_STATES)[number];

export interface HistoryDay {
  readonly date: string;
  readonly state: DayState;
  /** The window covering the day, as recorded. */
  readonly window: WindowDay;
  /** How that window stands (status's word: an attempt no live run holds is interrupted). */
  readonly standing: WindowStanding;
}

export interface OrganizationHistory {
  readonly org: string;
  /** The days a window covers, by date; a day not here was never loaded. */
  readonly days: ReadonlyMap<string, HistoryDay>;
  /** The first date a window covers (null: none). */
  readonly first: string | null;
}

/**
 * A day's state from its window's standing: a failed latest attempt is failed (whatever rows an earlier load
 * left), one a live run holds is in progress; otherwise (loaded, or an attempt no run holds any more) what the
 * rows are: final, open, or never loaded.
 */
export function dayState(day: Pick<WindowDay, 'rows'>, standing: WindowStanding): DayState {
  if (standing === 'failed') return 'failed';
  if (standing === 'in progress') return 'in progress';
  return day.rows === 'none' ? 'never loaded' : day.rows;
}

/**
 * The history of each of `orgs` from `from` to `to` (null: unbounded): one query for the days, and one for the
 * claims of the windows whose attempt is under way (is a live run on them?). Reads only.
 */
export async function readHistory(
  db: pg.Pool,
  schema: string,
  orgs: readonly string[],
  from: string | null,
  to: string | null,
): Promise<OrganizationHistory[]> {
  const days = await readWindowDays(db, schema, orgs, from, to);
  const histories: OrganizationHistory[] = [];
  for (const org of orgs) {
    const own = days.filter((d) => d.org === org);
    const underWay = new Map<string, Window>();
    for (const d of own) {
      if (d.status === 'extracting' || d.status === 'staging') {
        underWay.set(`${d.windowStart}..${d.windowEnd}`, { start: d.windowStart, end: d.windowEnd });
      }
    }
    const windows = [...underWay.values()];
    const holders = windows.length === 0 ? [] : await windowClaimHolders(db, { schema, org }, windows);
    const claimed = new Set(
      windows.filter((_, i) => (holders[i] ?? null) !== null).map((w) => `${w.start}..${w.end}`),
    );
    const byDate = new Map<string, HistoryDay>();
    for (const d of own) {
      const standing = standingOf(d, claimed.has(`${d.windowStart}..${d.windowEnd}`));
      byDate.set(d.date, { date: d.date, state: dayState(d, standing), window: d, standing });
    }
    histories.push({ org, days: byDate, first: own[0]?.date ?? null });
  }
  return histories;
}
