import type { Window } from '../model/window.js';
import type { RunStatus } from './exit-codes.js';

export { EXIT, type RunStatus } from './exit-codes.js';

export interface WindowFailure extends Window {
  readonly code: string;
  readonly message: string;
}

/** The outcome of a run: the CLI prints it as one JSON line on stdout. */
export interface RunSummary {
  readonly command: 'backfill' | 'sync';
  /** The connector's version (package.json). */
  readonly version: string;
  readonly status: RunStatus;
  readonly exitCode: number;
  readonly from: string | null;
  readonly to: string | null;
  readonly windows: {
    readonly planned: number;
    readonly loaded: number;
    readonly skipped: number;
    readonly failed: number;
    /** Windows stopped by SIGINT/SIGTERM (or the AbortSignal): not failed; the next run resumes them. */
    readonly interrupted: number;
    /** Windows the signal came before: not begun, left as they were (`status` does not list them interrupted). */
    readonly notStarted: number;
    /** Planned windows another process loaded while this run waited for them (runs sharing the schema). */
    readonly byOthers: number;
  };
  readonly posts: number;
  readonly pages: number;
  readonly retries: number;
  readonly reportsCreated: number;
  readonly durationMs: number;
  readonly cursor: string | null;
  readonly failures: readonly WindowFailure[];
  /** What --reset removed before loading: the windows that were loaded and their posts. */
  readonly reset?: { readonly windows: number; readonly posts: number };
  /** Why the run could not start, or stopped before its windows were done (a rejected token). */
  readonly error?: { readonly code: string; readonly message: string };
}

/** Progress events, for a live display or an orchestrator. */
export type ProgressEvent =
  | { readonly type: 'planned'; readonly windows: number; readonly skipped: number }
  | { readonly type: 'window-started'; readonly window: Window; readonly attempt: number }
  | { readonly type: 'page-staged'; readonly window: Window; readonly posts: number }
  | {
      readonly type: 'window-loaded';
      readonly window: Window;
      /**
       * Posts of the commit that loaded this window. Windows replacing a loaded window of another size are
       * committed together, and each of them reports the commit's total (and its duration).
       */
      readonly posts: number;
      readonly durationMs: number;
    }
  | { readonly type: 'window-failed'; readonly window: Window; readonly error: string };
