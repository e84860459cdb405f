import { type RunConfig, SETTINGS } from '../config.js';
import { ConfigError } from '../errors.js';
import { startClock } from '../model/clock.js';
import { addDays, todayUtc } from '../model/dates.js';
import { executeRun } from './run.js';
import type { RunContext } from './run-context.js';
import type { LoadedHistory, RunRange } from './run-request.js';
import type { RunSummary } from './run-summary.js';
import { cutWindows, gridStart } from './windows.js';

export interface SyncOptions extends RunContext {
  /** Start over: clear the schema's data and state, then load from the start date (which it then needs). */
  readonly reset?: boolean;
  /** The last date to load; defaults to today (UTC). */
  readonly today?: string;
}

/**
 * Incremental load up to today (UTC). The first sync (or one that starts over) loads from `config.run.startDate`;
 * later ones reload the lookback before the cursor (the last completed date), so that late data inside it is
 * picked up, and a start date before that also loads whatever is missing from it on. The cursor then moves to the
 * day before the first window that failed, never past a date that did not load.
 */
export async function sync(options: SyncOptions): Promise<RunSummary> {
  const clock = options.clock ?? startClock(options.config.run.clockStart);
  const to = options.today ?? todayUtc(clock.now());
  const reset = options.reset ?? false;
  return executeRun(
    { ...options, clock },
    {
      command: 'sync',
      resolve: (history) => syncRange(options.config.run, history, to, reset),
      reset,
      moveCursor: true,
      today: to,
    },
  );
}

/** The dates a sync loads, given what is loaded; refuses a first sync (or a reset) without a start date. */
export function syncRange(run: RunConfig, history: LoadedHistory, to: string, reset: boolean): RunRange {
  const startDate = run.startDate;
  const upTo = (date: string): string => (date > to ? to : date);
  if (history.cursor === null) {
    if (startDate === undefined) {
      throw new ConfigError(
        'CONFIG_INVALID',
        `${reset ? '--reset starts over from the start date' : 'the first sync needs a start date'}: pass ${SETTINGS.startDate.flag} YYYY-MM-DD or set ${SETTINGS.startDate.env}`,
      );
    }
    // A date not come yet is a typo (a year off): loading today and setting the cursor would hide it.
    if (startDate > to) {
      throw new ConfigError(
        'CONFIG_INVALID',
        `${SETTINGS.startDate.flag} ${startDate} is after today (${to}, UTC): a sync loads up to today; pass a date on or before it`,
      );
    }
    const from = upTo(startDate);
    return { from, to, windows: cutWindows(from, to, run.windowDays), reload: true };
  }
  const lookback = lookbackStart(run, history.cursor, history.firstLoaded);
  // A start date before the loaded history loads what is missing from it on (windows loaded and complete are
  // skipped); one inside the history is already met.
  const historyStart = history.firstLoaded ?? lookback;
  const extend = startDate !== undefined && startDate < historyStart && startDate < lookback;
  const from = upTo(extend ? startDate : lookback);
  const range = {
    from,
    to,
    windows: cutWindows(from, to, run.windowDays),
    reload: false,
    reloadFrom: lookback,
  };
  if (startDate === undefined || startDate <= lookback) return range;
  return {
    ...range,
    notice: `start date ${startDate} is after the dates this sync must reload: it bounds only the first sync; loading from ${from}, so that no date after the cursor is skipped`,
  };
}

/**
 * The cursor minus the lookback, widened to the start of its grid window: reloading whole grid windows keeps them
 * aligned with those loaded before (a window clipped mid-week would replace the week's window and drag its other
 * days along, run after run). Never before the loaded history, though, unless the cursor itself is.
 */
function lookbackStart(run: RunConfig, cursor: string, firstLoaded: string | null): string {
  const aligned = gridStart(addDays(cursor, -run.lookbackDays), run.windowDays);
  if (firstLoaded === null) return aligned;
  const afterCursor = addDays(cursor, 1);
  const floor = firstLoaded < afterCursor ? firstLoaded : afterCursor;
  // biome-ignore lint/complexity/useMathMinMax: ISO dates compare as strings, not numbers
  return aligned < floor ? floor : aligned;
}
