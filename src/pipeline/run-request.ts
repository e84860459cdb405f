import type { Window } from '../model/window.js';

export interface RunRange {
  readonly from: string;
  readonly to: string;
  readonly windows: readonly Window[];
  /** Load every window of the range, loaded or not (backfill --reload). */
  readonly reload: boolean;
  /** Load the windows ending on or after this date even when loaded (the sync's lookback). */
  readonly reloadFrom?: string;
  /** Why the range is not what the user may expect, logged as a warning. */
  readonly notice?: string;
}

/** What earlier runs left, for deciding the dates to load. */
export interface LoadedHistory {
  /** The sync cursor (null before the first sync). */
  readonly cursor: string | null;
  /** The first date of the first loaded window (null when nothing is loaded). */
  readonly firstLoaded: string | null;
}

export interface RunRequest {
  readonly command: 'backfill' | 'sync';
  /** Decides the dates to load, given what is loaded (nothing, for a reset); may refuse the run. */
  readonly resolve: (history: LoadedHistory) => RunRange;
  /** Start over: clear the schema's data and state, then load what a first run would. */
  readonly reset: boolean;
  /** Move the incremental cursor on success (sync only). */
  readonly moveCursor: boolean;
  /** The run's today (UTC): a window reaching it is loaded open, and loaded again by the next run covering it. */
  readonly today: string;
}
