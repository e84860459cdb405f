import { fromDayNumber, toDayNumber } from '../model/dates.js';
import {
  DAY_STATES,
  type DayState,
  type HistoryDay,
  type OrganizationHistory,
} from '../pipeline/history-calendar.js';
import { terminalSafe } from '../secret.js';

/*
 * The loaded history drawn as a year of days per organization: a column per week (Monday first), a row per
 * weekday, a character per day. Each state has a character of its own, so that the picture reads without colour
 * (in a pipe, with NO_COLOR); colour, where the terminal allows it, is added on top.
 */

/** A day of the grid: its state, or `to come` for a day after today. */
export interface CalendarCell {
  readonly date: string;
  readonly state: DayState | 'to come';
  readonly day: HistoryDay | undefined;
}

export interface CalendarYear {
  readonly org: string;
  readonly year: number;
  /** [week][weekday] (Monday 0); null outside the year. */
  readonly weeks: readonly (readonly (CalendarCell | null)[])[];
  /** The year's days up to today, by state. */
  readonly counts: Readonly<Record<DayState, number>>;
  /** The week each month starts in, with its name. */
  readonly months: readonly { readonly week: number; readonly name: string }[];
}

const MONTHS = ['Jan', 'Feb', 'Mar', 'Apr', 'May', 'Jun', 'Jul', 'Aug', 'Sep', 'Oct', 'Nov', 'Dec'];
export const WEEKDAYS = ['Mon', 'Tue', 'Wed', 'Thu', 'Fri', 'Sat', 'Sun'];

/** Monday 0 … Sunday 6 of a day number (1970-01-01, day 0, was a Thursday). */
function weekday(dayNumber: number): number {
  return (((dayNumber + 3) % 7) + 7) % 7;
}

/** The years to draw: `year` alone, or every year from the first one a window covers to today's. */
export function yearsOf(histories: readonly OrganizationHistory[], today: string, year?: number): number[] {
  if (year !== undefined) return [year];
  const last = Number(today.slice(0, 4));
  const firsts = histories.map((h) => h.first).filter((d): d is string => d !== null);
  const first = firsts.length === 0 ? last : Math.min(last, ...firsts.map((d) => Number(d.slice(0, 4))));
  const years: number[] = [];
  for (let y = first; y <= last; y++) years.push(y);
  return years;
}

/** The grid of one organization's year, as of `today` (later days are to come). */
export function calendarYear(history: OrganizationHistory, year: number, today: string): CalendarYear {
  const first = toDayNumber(`${year}-01-01`);
  const last = toDayNumber(`${year}-12-31`);
  const monday = first - weekday(first);
  const todayNumber = toDayNumber(today);
  const weeks: (CalendarCell | null)[][] = [];
  const counts = Object.fromEntries(DAY_STATES.map((s) => [s, 0])) as Record<DayState, number>;
  const months: { week: number; name: string }[] = [];
  for (let n = first; n <= last; n++) {
    const date = fromDayNumber(n);
    const week = Math.floor((n - monday) / 7);
    if (weeks[week] === undefined) weeks[week] = Array<CalendarCell | null>(7).fill(null);
    const column = weeks[week];
    if (date.endsWith('-01')) months.push({ week, name: MONTHS[Number(date.slice(5, 7)) - 1] ?? '' });
    const day = history.days.get(date);
    const state: CalendarCell['state'] = n > todayNumber ? 'to come' : (day?.state ?? 'never loaded');
    if (state !== 'to come') counts[state] += 1;
    column[weekday(n)] = { date, state, day };
  }
  return { org: history.org, year, weeks, counts, months };
}

/** The character of each state, distinct without colour. */
export const STATE_CHARACTERS: Readonly<Record<DayState | 'to come', string>> = {
  final: '#',
  open: 'o',
  failed: 'X',
  'in progress': '>',
  'never loaded': '.',
  'to come': ' ',
};

/** SGR colours: green, yellow, red, cyan, grey. */
const STATE_COLOURS: Readonly<Record<DayState, string>> = {
  final: '32',
  open: '33',
  failed: '1;31',
  'in progress': '1;36',
  'never loaded': '90',
};

/** `count` days of a state, coloured when `colour`. */
function paint(state: DayState | 'to come', colour: boolean, count = 1): string {
  const chars = STATE_CHARACTERS[state].repeat(count);
  if (!colour || state === 'to come') return chars;
  return `\u001b[${STATE_COLOURS[state]}m${chars}\u001b[0m`;
}

/** `300 final, 2 open, …`: a year's days up to today, by state. */
export function describeCounts(counts: Readonly<Record<DayState, number>>): string {
  return DAY_STATES.map((s) => `${counts[s]} ${s}`).join(', ');
}

/** The legend: each state's character and its name. */
export function legend(colour: boolean): string {
  return `${DAY_STATES.map((s) => `${paint(s, colour)} ${s}`).join('   ')}   (blank: days to come)`;
}

/**
 * The lines of a year's grid: a title with the counts, the months over their first week, a row per weekday.
 * `where` names the organization (and schema); it is made safe for a terminal here.
 */
export function calendarLines(calendar: CalendarYear, where: string, colour: boolean): string[] {
  const prefix = '    ';
  let header = '';
  for (const { week, name } of calendar.months) {
    // A month whose first week is taken by the previous label's letters starts where there is room.
    const at = Math.max(week, header.length === 0 ? 0 : header.length + 1);
    header = header.padEnd(at) + name;
  }
  const rows = WEEKDAYS.map((name, d) => {
    // Days of one state side by side share one colour sequence.
    let line = '';
    let run: { state: DayState | 'to come'; length: number } | null = null;
    const flush = () => {
      if (run !== null) line += paint(run.state, colour, run.length);
    };
    for (const week of calendar.weeks) {
      const cell = week[d] ?? null;
      if (cell === null) {
        flush();
        run = null;
        line += ' ';
      } else if (run !== null && run.state === cell.state) {
        run.length += 1;
      } else {
        flush();
        run = { state: cell.state, length: 1 };
      }
    }
    flush();
    return `${name} ${line}`.trimEnd();
  });
  return [
    terminalSafe(`${where}, ${calendar.year}: ${describeCounts(calendar.counts)}`),
    `${prefix}${header}`.trimEnd(),
    ...rows,
  ];
}
