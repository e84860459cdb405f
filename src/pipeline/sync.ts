import { ConfigError } from '../errors.js';
import { addDays, todayUtc } from './dates.js';
import { executeRun, type RunContext } from './run.js';
import type { RunSummary } from './run-summary.js';
import { cutWindows, gridStart } from './windows.js';

export interface SyncOptions extends RunContext {
  /** Clear the schema if it was loaded with other filters. */
  readonly reset?: boolean;
  /** The last date to load; defaults to today (UTC). */
  readonly today?: string;
}

/**
 * Incremental load: from the cursor (the last completed date) minus the lookback, widened to the start of its grid
 * window, up to today (UTC), so that late data inside the lookback is picked up. The first run starts at `config.run.startDate`. The cursor then moves to
 * the last date before the first window that failed, never past a date that did not load.
 */
export async function sync(options: SyncOptions): Promise<RunSummary> {
  const { config } = options;
  const to = options.today ?? todayUtc();
  // Reloading whole grid windows keeps them aligned with those loaded before: a window clipped mid-week would
  // replace the week's window and drag its other days along, run after run. Never before the start date, though.
  const lookbackStart = (cursor: string): string => {
    const aligned = gridStart(addDays(cursor, -config.run.lookbackDays), config.run.windowDays);
    const first = config.run.startDate;
    return first !== undefined && first > aligned ? first : aligned;
  };
  return executeRun(options, {
    command: 'sync',
    resolve(cursor) {
      const start = cursor === null ? config.run.startDate : lookbackStart(cursor);
      if (start === undefined) {
        throw new ConfigError(
          'CONFIG_INVALID',
          'the first sync needs a start date: pass --start-date YYYY-MM-DD or set POST_REPORTS_START_DATE',
        );
      }
      // biome-ignore lint/complexity/useMathMinMax: ISO dates compare as strings, not numbers
      const from = start > to ? to : start;
      return { from, to, windows: cutWindows(from, to, config.run.windowDays) };
    },
    reload: true,
    reset: options.reset ?? false,
    moveCursor: true,
  });
}
