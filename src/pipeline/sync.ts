import { ConfigError } from '../errors.js';
import { addDays, todayUtc } from './dates.js';
import { executeRun, type RunContext } from './run.js';
import type { RunSummary } from './run-summary.js';
import { cutWindows } from './windows.js';

export interface SyncOptions extends RunContext {
  /** Clear the schema if it was loaded with other filters. */
  readonly reset?: boolean;
  /** The last date to load; defaults to today (UTC). */
  readonly today?: string;
}

/**
 * Incremental load: from the cursor (the last completed date) minus the lookback, up to today (UTC), so that late
 * data inside the lookback is picked up. The first run starts at `config.run.startDate`. The cursor then moves to
 * the last date before the first window that failed, never past a date that did not load.
 */
export async function sync(options: SyncOptions): Promise<RunSummary> {
  const { config } = options;
  const to = options.today ?? todayUtc();
  return executeRun(options, {
    command: 'sync',
    resolve(cursor) {
      const start = cursor === null ? config.run.startDate : addDays(cursor, -config.run.lookbackDays);
      if (start === undefined) {
        throw new ConfigError(
          'CONFIG_INVALID',
          'the first sync needs a start date: pass --start-date YYYY-MM-DD or set POST_REPORTS_START_DATE',
        );
      }
      const from = start > to ? to : start;
      return { from, to, windows: cutWindows(from, to, config.run.windowDays) };
    },
    reload: true,
    reset: options.reset ?? false,
    moveCursor: true,
  });
}
