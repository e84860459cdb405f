/*
 * Window-atomic loads. Each window is staged page by page into two tables of its own (staging.ts), then whole
 * windows replace what was loaded for their dates in posts and post_custom_segments, in one transaction
 * (commit.ts): readers see the old window or the new one, never a mix; a killed connection leaves the old contents.
 *
 * Value rules (see field-types.ts, schema-evolution.ts, copy-encoding.ts): new fields get typed nullable
 * columns, bigint widens to numeric, a value a column cannot take fails the window with
 * DataError('FIELD_TYPE_MISMATCH'), NUL characters become U+FFFD (counted, logged), a post id repeated within a
 * report keeps its last occurrence.
 */
import type pg from 'pg';
import type { Logger } from '../logger.js';
import type { Window } from '../model/window.js';
import { type CommitOptions, commitWindows } from './commit.js';
import { declaredTypes } from './declared-types.js';
import type { LoadContext } from './load-context.js';
import type { Target } from './migrate.js';
import type { Registry } from './schema-evolution.js';
import { scopeOf } from './scope.js';
import type { StageProgress } from './stage-progress.js';
import {
  type OpenWindowOptions,
  openWindow,
  type PreparedPage,
  preparePage,
  type StagedPage,
  type StageShape,
  writePage,
} from './staging.js';
import type { CopyPools } from './tape-encoding.js';

/** Stages report pages per window and replaces whole windows in posts and post_custom_segments. */
export class Loader {
  readonly #context: LoadContext;

  constructor(pool: pg.Pool, target: Target, logger: Logger) {
    this.#context = {
      pool,
      target,
      scope: scopeOf(target),
      logger,
      declared: declaredTypes(target.postIdField),
      columns: { widenings: 0, kept: new Set() },
    };
  }

  /**
   * Prepares (or resumes) the stage of a window for this report. Returns what is already staged for that SAME
   * report (so a restart can continue from nextPage without downloading staged pages again); a different report
   * id discards the old stage. Creates the report_windows row (status 'staging') if absent, else records the
   * report id on it as its attempt's (the loaded report stays until the commit replaces it).
   */
  openWindow(
    window: Window,
    reportId: string,
    signal?: AbortSignal,
    options: OpenWindowOptions = {},
  ): Promise<StageProgress> {
    return openWindow(this.#context, window, reportId, signal, options);
  }

  /**
   * The first half of staging a page, mostly CPU: schema evolution of posts for the page's new fields (its own
   * short DDL transaction), the column types, and the COPY text. Writes nothing to the stage, so the next page can
   * be prepared while the previous one is written (writePage): on two cores encoding then overlaps the
   * database's work. Pages must still be written in order. `registry`: the `registry` of the page prepared before
   * this one in the same attempt; the page is planned against it instead of the catalog read again (see
   * staging.ts evolveFor). `pools`: where the COPY text's memory comes from; the caller gives it back once the page
   * is written.
   */
  preparePage(
    window: Window,
    page: StagedPage,
    signal?: AbortSignal,
    registry?: Registry,
    pools?: CopyPools,
  ): Promise<PreparedPage> {
    return preparePage(this.#context, window, page, signal, registry, pools);
  }

  /**
   * The second half: in ONE transaction, the stage's columns, the COPY of posts and segments, and the progress
   * (page index + next_page token), so that stage and progress agree. A page already staged is skipped (a retry
   * after a lost acknowledgement), a gap is a StoreError. `stage`: what writing the page before in the same
   * attempt returned; while the stage is as that page left it, the page's statements are pipelined (two round
   * trips instead of eight). Returns the stage as this page leaves it (undefined when it was already staged).
   */
  writePage(
    prepared: PreparedPage,
    signal?: AbortSignal,
    stage?: StageShape,
  ): Promise<StageShape | undefined> {
    return writePage(this.#context, prepared, signal, stage);
  }

  /**
   * Atomically replaces, in one transaction, everything loaded before for the dates these windows cover with
   * what is staged for them: deletes the rows of the old windows and inserts each stage's into the partition of
   * its period (made when missing); marks their report_windows rows 'loaded' with row_count, loaded_through (see CommitOptions) and
   * finished_at and deletes the report_windows rows of the old windows they replaced. Each window must be
   * completely staged (its last staged page had no next page; an empty report is one empty page). Throws
   * StoreError('SCHEMA_MISMATCH') if an old loaded window overlapping them is not entirely covered by the union of
   * `windows`, or if the windows overlap each other: a date is never counted twice, and never lost.
   */
  commitWindows(
    windows: readonly Window[],
    signal?: AbortSignal,
    options: CommitOptions = {},
  ): Promise<{ rows: number }> {
    return commitWindows(this.#context, windows, signal, options);
  }
}
