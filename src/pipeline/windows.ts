import { fromDayNumber, toDayNumber } from '../model/dates.js';
import { byStart, type LoadedWindow, overlaps, sameWindow, type Window } from '../model/window.js';

// 1970-01-05 was a Monday: with 7-day windows the grid is ISO weeks, which is what people expect to read.
const GRID_ORIGIN = toDayNumber('1970-01-05');

/** The first date of the grid window that holds `date`. */
export function gridStart(date: string, windowDays: number): string {
  const day = toDayNumber(date);
  return fromDayNumber(GRID_ORIGIN + Math.floor((day - GRID_ORIGIN) / windowDays) * windowDays);
}

/**
 * Cuts `[from, to]` into windows of `windowDays` aligned to a fixed grid that does not depend on `from`, so that a
 * date always falls in the same window for a given size; the first and last windows are clipped to the range.
 */
export function cutWindows(from: string, to: string, windowDays: number): Window[] {
  const first = toDayNumber(from);
  const last = toDayNumber(to);
  const windows: Window[] = [];
  let cell = Math.floor((first - GRID_ORIGIN) / windowDays);
  for (;;) {
    const cellStart = GRID_ORIGIN + cell * windowDays;
    if (cellStart > last) break;
    const start = Math.max(cellStart, first);
    const end = Math.min(cellStart + windowDays - 1, last);
    windows.push({ start: fromDayNumber(start), end: fromDayNumber(end) });
    cell += 1;
  }
  return windows;
}

/** The dates of `outer` that none of `cover` contains, as maximal runs. */
export function uncovered(outer: Window, cover: readonly Window[]): Window[] {
  const pieces: Window[] = [];
  let runStart: number | undefined;
  const last = toDayNumber(outer.end);
  for (let day = toDayNumber(outer.start); day <= last + 1; day += 1) {
    const date = fromDayNumber(day);
    const free = day <= last && !cover.some((w) => w.start <= date && date <= w.end);
    if (free && runStart === undefined) runStart = day;
    if (!free && runStart !== undefined) {
      pieces.push({ start: fromDayNumber(runStart), end: fromDayNumber(day - 1) });
      runStart = undefined;
    }
  }
  return pieces;
}

/** A set of windows committed in one transaction. */
export type WindowGroup = readonly Window[];

export interface PlanOptions {
  /** Load every wanted window, loaded or not. */
  readonly reload: boolean;
  /** Load the wanted windows ending on or after this date even when loaded (the sync's lookback). */
  readonly reloadFrom?: string;
  /**
   * The run's today: a loaded window that reaches past it (an earlier version loaded a --to after today) is asked
   * for whole in place of the wanted windows it holds, as it was loaded: the API hands back that report, where the
   * report of a shorter window could be older than its rows and refused until the API's reuse period ends.
   */
  readonly today?: string;
}

/**
 * Plans which windows to load and how to group their commits, given the windows already loaded. A wanted window
 * is skipped when it is loaded and complete, unless asked to reload.
 *
 * Loading a window replaces every loaded window it overlaps, whole. When the window size changed, an old window
 * can stick out of the new ones: its remaining dates are added as extra windows and committed in the same
 * transaction, so that no date is ever counted twice nor lost, and no reader sees a gap.
 */
export function planWindows(
  wanted: readonly Window[],
  loaded: readonly LoadedWindow[],
  options: PlanOptions,
): { groups: WindowGroup[]; skipped: Window[] } {
  const skipped: Window[] = [];
  const toLoad: Window[] = [];
  const { reload, reloadFrom, today } = options;
  for (const w of today === undefined ? wanted : asLoadedBeyond(wanted, loaded, today)) {
    const again = reload || (reloadFrom !== undefined && w.end >= reloadFrom);
    if (!again && loaded.some((l) => sameWindow(l, w) && l.complete !== false)) skipped.push(w);
    else toLoad.push(w);
  }
  // Close over the old windows the new ones overlap: each must end up entirely covered.
  const all = [...toLoad];
  for (let changed = true; changed; ) {
    changed = false;
    for (const old of loaded) {
      if (!all.some((w) => overlaps(w, old))) continue;
      const rest = uncovered(old, all);
      if (rest.length > 0) {
        all.push(...rest);
        changed = true;
      }
    }
  }
  all.sort(byStart);
  // Union-find over "overlaps the same old window".
  const parent = all.map((_, i) => i);
  const find = (i: number): number => {
    let root = i;
    while (parent[root] !== root) root = parent[root] as number;
    return root;
  };
  for (const old of loaded) {
    const members = all.flatMap((w, i) => (overlaps(w, old) && !sameWindow(w, old) ? [i] : []));
    for (const m of members.slice(1)) parent[find(m)] = find(members[0] as number);
  }
  const byRoot = new Map<number, Window[]>();
  all.forEach((w, i) => {
    const root = find(i);
    const group = byRoot.get(root) ?? [];
    group.push(w);
    byRoot.set(root, group);
  });
  return { groups: [...byRoot.values()], skipped };
}

/** `wanted`, each window held by a loaded window that starts by `today` and ends after it replaced by that one. */
function asLoadedBeyond(wanted: readonly Window[], loaded: readonly Window[], today: string): Window[] {
  const out: Window[] = [];
  for (const w of wanted) {
    const beyond = loaded.find(
      (l) => l.start <= today && l.end > today && l.start <= w.start && w.end <= l.end,
    );
    const window = beyond === undefined ? w : { start: beyond.start, end: beyond.end };
    if (!out.some((o) => sameWindow(o, window))) out.push(window);
  }
  return out;
}
