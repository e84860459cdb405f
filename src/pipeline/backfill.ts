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

/** The windows of `[from, to]` (dates checked: a bad one is a ConfigError naming it). */
export function backfillRange(
  fromText: string,
  toText: string,
  windowDays: number,
  reload: boolean,
): RunRange {
  const from = parseDate('--from', fromText);
  const to = parseDate('--to', toText);
  if (from > to) throw new ConfigError('CONFIG_INVALID', `--from ${from} is after --to ${to}`);
  return { from, to, windows: cutWindows(from, to, windowDays), reload };
}

/**
 * Loads every window of `[from, to]`. Windows already loaded are skipped unless `reload`, or unless they were
 * loaded open (they reached the day they were loaded: the next run completes them); the incremental cursor is
 * never moved. Resolves with the run summary (check `status`); rejects only when the run could not start
 * (bad configuration or filters, a held lock, an unreachable database or API).
 */
export async function backfill(options: BackfillOptions): Promise<RunSummary> {
  const range = backfillRange(
    options.from,
    options.to,
    options.config.run.windowDays,
    options.reload ?? false,
  );
  const clock = options.clock ?? startClock(options.config.run.clockStart);
  return executeRun(
    { ...options, clock },
    {
      command: 'backfill',
      resolve: () => range,
      reset: options.reset ?? false,
      moveCursor: false,
      today: options.today ?? todayUtc(clock.now()),
    },
  );
}
