import { parseDate } from '../config.js';
import { ConfigError } from '../errors.js';
import { startClock } from '../model/clock.js';
import { todayUtc } from '../model/dates.js';
import { executeRun } from './run.js';
import type { RunContext } from './run-context.js';
import type { RunRange } from './run-request.js';
import type { RunSummary } from './run-summary.js';
import { cutWindows } from './windows.js';

export interface BackfillOptions extends RunContext {
  /** First date, YYYY-MM-DD, inclusive. */
  readonly from: string;
  /** Last date, YYYY-MM-DD, inclusive. */
  readonly to: string;
  /** Reload windows already loaded. */
  readonly reload?: boolean;
  /** Start over: clear the schema's data and state (loaded windows, cursor), then load the range. */
  readonly reset?: boolean;
  /** The run's today (UTC; default: the current date): a window reaching it is loaded open. */
  readonly today?: string;
}

/** A backfill's range and what became of a --to after today. */
export interface BackfillRange extends RunRange {
  /** The --to asked for when it was after today and the range was cut there; absent otherwise. */
  readonly cutFrom?: string;
}

/**
 * The windows of `[from, to]` (dates checked: a bad one is a ConfigError naming it). A `to` after `today` is cut
 * at today: dates that have not begun hold nothing yet, and a window recorded for them would be loaded with another
 * extent than a sync's, whose report the API then hands back older than those rows. A `from` after today is refused.
 */
export function backfillRange(
  fromText: string,
  toText: string,
  windowDays: number,
  reload: boolean,
  today?: string,
): BackfillRange {
  const from = parseDate('--from', fromText);
  const asked = parseDate('--to', toText);
  if (from > asked) throw new ConfigError('CONFIG_INVALID', `--from ${from} is after --to ${asked}`);
  if (today !== undefined && from > today) {
    throw new ConfigError(
      'CONFIG_INVALID',
      `--from ${from} is after today (${today}, UTC): nothing to load yet; give dates up to ${today}`,
    );
  }
  const to = today !== undefined && asked > today ? today : asked;
  return {
    from,
    to,
    windows: cutWindows(from, to, windowDays),
    reload,
    ...(to === asked ? {} : { cutFrom: asked }),
  };
}

/** The warning of a --to cut at today. */
export function cutWarning(range: BackfillRange): string | undefined {
  return range.cutFrom === undefined
    ? undefined
    : `--to ${range.cutFrom} is after today (${range.to}, UTC): loading up to ${range.to}; a later run loads the days to come`;
}

/**
 * Loads every window of `[from, to]`. Windows already loaded are skipped unless `reload`, or unless they were
 * loaded open (they reached the day they were loaded: the next run completes them); the incremental cursor is
 * never moved. Resolves with the run summary (check `status`); rejects only when the run could not start
 * (bad configuration or filters, a held lock, an unreachable database or API).
 */
export async function backfill(options: BackfillOptions): Promise<RunSummary> {
  const clock = options.clock ?? startClock(options.config.run.clockStart);
  const today = options.today ?? todayUtc(clock.now());
  const range = backfillRange(
    options.from,
    options.to,
    options.config.run.windowDays,
    options.reload ?? false,
    today,
  );
  const cut = cutWarning(range);
  if (cut !== undefined) options.logger.warn(cut);
  return executeRun(
    { ...options, clock },
    {
      command: 'backfill',
      resolve: () => range,
      reset: options.reset ?? false,
      moveCursor: false,
      today,
    },
  );
}
