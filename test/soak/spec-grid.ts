/*
 * The windows of a range as the README states them: a fixed grid of `--window-days` days counted from Monday
 * 1970-01-05 (7: ISO weeks, Monday to Sunday), the first and last windows clipped to the range. The soak's own
 * reading, date by date, written apart from the connector's cutWindows: an episode compares the two before it
 * starts, and checks the tables against its own.
 */
import type { Window } from '../../src/model/window.js';
import { cutWindows } from '../../src/pipeline/windows.js';

const DAY_MS = 86_400_000;
const ORIGIN_MS = Date.UTC(1970, 0, 5);

/** The windows of [from, to], by the README's grid. */
export function specWindows(from: string, to: string, windowDays: number): Window[] {
  const windows: { cell: number; start: string; end: string }[] = [];
  const last = Date.parse(`${to}T00:00:00Z`);
  for (let t = Date.parse(`${from}T00:00:00Z`); t <= last; t += DAY_MS) {
    const cell = Math.floor((t - ORIGIN_MS) / DAY_MS / windowDays);
    const date = new Date(t).toISOString().slice(0, 10);
    const open = windows.at(-1);
    if (open !== undefined && open.cell === cell) open.end = date;
    else windows.push({ cell, start: date, end: date });
  }
  return windows.map(({ start, end }) => ({ start, end }));
}

/** Where the connector's windows differ from the README's, one line each; none when they agree. */
export function gridProblems(
  from: string,
  to: string,
  windowDays: number,
  connector: readonly Window[],
): string[] {
  const own = specWindows(from, to, windowDays);
  const problems: string[] = [];
  const text = (w: Window | undefined) => (w === undefined ? '(none)' : `${w.start}..${w.end}`);
  for (let i = 0; i < Math.max(own.length, connector.length); i += 1) {
    if (text(own[i]) !== text(connector[i])) {
      problems.push(
        `window ${i + 1} of ${from}..${to} (${windowDays} days): the README's grid has ${text(own[i])}, the connector cuts ${text(connector[i])}`,
      );
    }
  }
  if (windowDays === 7) {
    // Whole weeks run Monday to Sunday.
    for (const w of own.slice(1, -1)) {
      const startDay = new Date(`${w.start}T00:00:00Z`).getUTCDay();
      const endDay = new Date(`${w.end}T00:00:00Z`).getUTCDay();
      if (startDay !== 1 || endDay !== 0) problems.push(`week ${w.start}..${w.end} is not Monday to Sunday`);
    }
  }
  return problems;
}

/**
 * The README's windows of [from, to], for the episode's ledger; the soak stops, naming each difference, when the
 * connector cuts the range otherwise.
 */
export function ownGrid(from: string, to: string, windowDays: number): Window[] {
  const problems = gridProblems(from, to, windowDays, cutWindows(from, to, windowDays));
  if (problems.length > 0)
    throw new Error(`soak: the connector's windows are not the README's: ${problems.join('; ')}`);
  return specWindows(from, to, windowDays);
}
