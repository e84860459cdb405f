/*
 * Window-atomic loads. Each window is staged page by page into two tables of its own
 * (stage_<start>_<end>_posts / _segments) by COPY, with its resume progress in the stage_progress table,
 * written in the same transaction as the page, so that stage and progress always agree. A stage has the layout
 * of a window partition of posts / post_custom_segments: commitWindows builds its primary key, then in one
 * transaction drops the partitions of the windows loaded before for those dates and attaches the stages in
 * their place. Every row is written once; readers see the old window or the new one, never a mix; a killed
 * connection leaves the old contents.
 *
 * Value rules (see field-types.ts, schema-evolution.ts, copy-encoding.ts): new fields get typed nullable
 * columns, bigint widens to numeric, a value a column cannot take fails the window with
 * DataError('FIELD_TYPE_MISMATCH'), NUL characters become U+FFFD (counted, logged), a post id repeated within a
 * report keeps its last occurrence.
 */
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { setTimeout as sleep } from 'node:timers/promises';
import type pg from 'pg';
import { from as copyFrom } from 'pg-copy-streams';
import { isIsoDate } from '../config.js';
import { StoreError } from '../errors.js';
import type { MappedPost } from '../extract/post-record.js';
import type { Logger } from '../logger.js';
import { type EncodeStats, encodePage, MAX_PAGE_ROWS, type PageColumn } from './copy-encoding.js';
import { asStoreError, withTransaction } from './database.js';
import { type DeclaredType, declaredTypes } from './declared-types.js';
import type { Target } from './migrate.js';
import { LOCK_NOT_AVAILABLE, sqlState, UNIQUE_VIOLATION } from './pg-error-codes.js';
import * as q from './queries.js';
import { evolvePosts, planPage, type Registry, readRegistry } from './schema-evolution.js';

/** A report window: dates YYYY-MM-DD, both inclusive. */
export interface WindowKey {
  start: string;
  end: string;
}

/** What is staged of a window for one report. */
export interface StageProgress {
  reportId: string;
  /** Pages staged so far; the next page to stage has this index (pages count from 0). */
  pagesStaged: number;
  /** The next_page token of the last staged page: where to resume; null when complete or nothing is staged. */
  nextPage: string | null;
  rowsStaged: number;
}

/** One page of a report, as the extractor read it. */
export interface StagedPage {
  /** 0 for the first page, then 1, 2, … */
  index: number;
  /** The page's next_page token (null on the last page). */
  nextPage: string | null;
  posts: readonly MappedPost[];
}

/** A page encoded for the stage by preparePage, to be written by writePage. */
export interface PreparedPage {
  readonly window: WindowKey;
  readonly index: number;
  readonly nextPage: string | null;
  readonly rows: number;
  readonly columns: readonly PageColumn[];
  /** The stage's SQL type of each column, in the order of `columns`. */
  readonly stageTypes: readonly string[];
  /** COPY text of the posts and of their segments ('' when none). */
  readonly posts: string;
  readonly segments: string;
  readonly nulReplaced: number;
}

export interface CommitOptions {
  /** The run's today (YYYY-MM-DD, UTC; default: the current date): a window reaching it is recorded as open. */
  today?: string;
}

export interface OpenWindowOptions {
  /** Filters recorded on a new report_windows row (default: the target's filters in sync_state). */
  filters?: unknown;
}

interface ProgressRow {
  report_id: string;
  pages_staged: number;
  next_page: string | null;
  rows_staged: string;
  stage_posts: string;
  stage_segments: string;
}

/** Stages report pages per window and swaps whole windows into posts and post_custom_segments. */
export class Loader {
  readonly #pool: pg.Pool;
  readonly #target: Target;
  readonly #logger: Logger;
  readonly #declared: ReadonlyMap<string, DeclaredType>;

  constructor(pool: pg.Pool, target: Target, logger: Logger) {
    this.#pool = pool;
    this.#target = target;
    this.#logger = logger;
    this.#declared = declaredTypes(target.postIdField);
  }

  /**
   * Prepares (or resumes) the stage of a window for this report. Returns what is already staged for that SAME
   * report (so a restart can continue from nextPage without downloading staged pages again); a different report
   * id discards the old stage. Creates the report_windows row (status 'staging') if absent, else records the
   * report id on it as its attempt's (the loaded report stays until the commit replaces it).
   */
  async openWindow(
    window: WindowKey,
    reportId: string,
    signal?: AbortSignal,
    options: OpenWindowOptions = {},
  ): Promise<StageProgress> {
    checkWindow(window);
    const { schema } = this.#target;
    const names = stageNames(window);
    try {
      signal?.throwIfAborted();
      return await withTransaction(this.#pool, signal, async (client) => {
        await client.query(q.lockKey, [q.windowLockKey(schema, window.start, window.end)]);
        await client.query(q.openReportWindow(schema), [
          window.start,
          window.end,
          reportId,
          options.filters === undefined ? null : JSON.stringify(options.filters),
        ]);
        const found = await client.query<ProgressRow>(q.readProgress(schema, true), [
          window.start,
          window.end,
        ]);
        const row = found.rows[0];
        if (row && row.report_id === reportId && (await this.#stageExists(client, row))) {
          await client.query(q.reportWindowPages(schema), [window.start, window.end, row.pages_staged]);
          const progress = toProgress(row);
          this.#logger.info({ window: label(window), ...progress }, 'resuming staged window');
          return progress;
        }
        if (row) {
          this.#logger.info(
            { window: label(window), oldReportId: row.report_id, reportId },
            'discarding the stage of another report',
          );
        }
        await client.query(q.dropTable(schema, names.posts));
        await client.query(q.dropTable(schema, names.segments));
        const of = { postId: this.#target.postIdField, start: window.start, end: window.end, reportId };
        await client.query(q.createStagePosts(schema, names.posts, of));
        await client.query(q.createStageSegments(schema, names.segments, of));
        await client.query(q.resetProgress(schema), [
          window.start,
          window.end,
          reportId,
          names.posts,
          names.segments,
        ]);
        await client.query(q.reportWindowPages(schema), [window.start, window.end, 0]);
        return { reportId, pagesStaged: 0, nextPage: null, rowsStaged: 0 };
      });
    } catch (error) {
      throw asStoreError(`opening window ${label(window)}`, error);
    }
  }

  /**
   * Stages one page: schema evolution of posts for new fields first (its own short DDL transaction), then, in
   * ONE transaction, the stage's columns, the COPY of posts and segments, and the progress (page index +
   * next_page token), so that stage and progress agree. Pages must come in order: a page already staged is
   * skipped (a retry after a lost acknowledgement), a gap is a StoreError. The same as writePage(preparePage()).
   */
  async stagePage(window: WindowKey, page: StagedPage, signal?: AbortSignal): Promise<void> {
    await this.writePage(await this.preparePage(window, page, signal), signal);
  }

  /**
   * The first half of stagePage, mostly CPU: schema evolution of posts for the page's new fields, the column
   * types, and the COPY text. Writes nothing to the stage, so the next page can be prepared while the previous
   * one is written (writePage): on two cores encoding then overlaps the database's work. Pages must still be
   * written in order.
   */
  async preparePage(window: WindowKey, page: StagedPage, signal?: AbortSignal): Promise<PreparedPage> {
    checkWindow(window);
    if (page.posts.length >= MAX_PAGE_ROWS) {
      throw new StoreError(
        'DB_ERROR',
        `page ${page.index + 1} of window ${label(window)} has ${page.posts.length} posts, more than a page can hold`,
      );
    }
    // Messages count pages from 1, as the API's reader and the run's log do.
    const place = { window: label(window), page: page.index + 1 };
    try {
      signal?.throwIfAborted();
      let registry = await readRegistry(this.#pool, this.#target);
      let plan = planPage(page.posts, registry, place, this.#declared);
      for (let round = 0; plan.changes.length > 0; round++) {
        if (round >= 5)
          throw new StoreError(
            'DB_ERROR',
            `columns for window ${label(window)} page ${page.index + 1} keep changing`,
          );
        signal?.throwIfAborted();
        registry = await evolvePosts(this.#pool, this.#target, this.#logger, plan.changes, signal);
        plan = planPage(page.posts, registry, place, this.#declared);
      }
      const columns = pageColumns(plan.fields, registry);
      const stats: EncodeStats = { nulReplaced: 0 };
      const text = encodePage(page.posts, page.index, columns, stats);
      return {
        window: { start: window.start, end: window.end },
        index: page.index,
        nextPage: page.nextPage,
        rows: page.posts.length,
        columns,
        stageTypes: stageTypes(columns, registry),
        posts: text.posts,
        segments: text.segmentRows > 0 ? text.segments : '',
        nulReplaced: stats.nulReplaced,
      };
    } catch (error) {
      throw asStoreError(`staging window ${label(window)} page ${page.index + 1}`, error);
    }
  }

  /** The second half of stagePage: one transaction that COPYs a prepared page into the stage with its progress. */
  async writePage(prepared: PreparedPage, signal?: AbortSignal): Promise<void> {
    const { window, index } = prepared;
    const { schema } = this.#target;
    const place = { window: label(window), page: index + 1 };
    try {
      signal?.throwIfAborted();
      const staged = await withTransaction(this.#pool, signal, async (client) => {
        await client.query(q.stageAsynchronousCommit);
        const found = await client.query<ProgressRow>(q.readProgress(schema, true), [
          window.start,
          window.end,
        ]);
        const row = found.rows[0];
        if (!row)
          throw new StoreError('DB_ERROR', `window ${label(window)} is not open: call openWindow first`);
        if (index < row.pages_staged) return false;
        if (index > row.pages_staged) {
          throw new StoreError(
            'DB_ERROR',
            `window ${label(window)}: page ${index + 1} arrived but ${row.pages_staged + 1} is next`,
          );
        }
        if (row.pages_staged > 0 && row.next_page === null) {
          throw new StoreError(
            'DB_ERROR',
            `window ${label(window)}: page ${index + 1} arrived after the last page`,
          );
        }
        await this.#fitStageColumns(client, row.stage_posts, prepared.columns, prepared.stageTypes);
        await copyIn(
          client,
          q.copyStagePosts(
            schema,
            row.stage_posts,
            this.#target.postIdField,
            prepared.columns.map((c) => c.column),
          ),
          prepared.posts,
          signal,
        );
        await copyIn(
          client,
          q.copyStageSegments(schema, row.stage_segments, this.#target.postIdField),
          prepared.segments,
          signal,
        );
        await client.query(q.advanceProgress(schema), [
          window.start,
          window.end,
          index + 1,
          prepared.nextPage,
          prepared.rows,
        ]);
        await client.query(q.reportWindowPages(schema), [window.start, window.end, index + 1]);
        return true;
      });
      if (!staged) {
        this.#logger.debug({ ...place }, 'page already staged: skipped');
        return;
      }
      if (prepared.nulReplaced > 0) {
        this.#logger.warn({ ...place, count: prepared.nulReplaced }, 'NUL characters replaced by U+FFFD');
      }
      this.#logger.debug({ ...place, posts: prepared.rows }, 'page staged');
    } catch (error) {
      throw asStoreError(`staging window ${label(window)} page ${index + 1}`, error);
    }
  }

  /**
   * Atomically replaces, in one transaction, everything loaded before for the dates these windows cover with
   * what is staged for them: drops the partitions of the old windows and attaches each stage as its window's
   * partition; marks their report_windows rows 'loaded' with row_count, loaded_through (see CommitOptions) and
   * finished_at and deletes the report_windows rows of the old windows they replaced. Each window must be
   * completely staged (its last staged page had no next page; an empty report is one empty page). Throws StoreError('SCHEMA_MISMATCH') if an old
   * loaded window overlapping them is not entirely covered by the union of `windows`, or if the windows overlap
   * each other: a date is never counted twice, and never lost.
   */
  async commitWindows(
    windows: readonly WindowKey[],
    signal?: AbortSignal,
    options: CommitOptions = {},
  ): Promise<{ rows: number }> {
    if (windows.length === 0) return { rows: 0 };
    for (const window of windows) checkWindow(window);
    const sorted = [...windows].sort((a, b) => (a.start < b.start ? -1 : a.start > b.start ? 1 : 0));
    for (let i = 1; i < sorted.length; i++) {
      if (sorted[i]!.start <= sorted[i - 1]!.end) {
        throw new StoreError(
          'SCHEMA_MISMATCH',
          `windows ${label(sorted[i - 1]!)} and ${label(sorted[i]!)} overlap`,
        );
      }
    }
    const { schema } = this.#target;
    const what = `committing ${sorted.map(label).join(', ')}`;
    try {
      signal?.throwIfAborted();
      const rows = await withTransaction(this.#pool, signal, async (client) => {
        const progress: ProgressRow[] = [];
        for (const window of sorted) {
          const found = await client.query<ProgressRow>(q.readProgress(schema, true), [
            window.start,
            window.end,
          ]);
          const row = found.rows[0];
          if (!row || row.pages_staged === 0 || row.next_page !== null) {
            throw new StoreError(
              'DB_ERROR',
              `window ${label(window)} is not completely staged (${row ? `${row.pages_staged} pages, next page pending` : 'not open'})`,
            );
          }
          progress.push(row);
        }
        // The keys are built before the swap's locks: each stage is this transaction's alone.
        const counts: number[] = [];
        for (const row of progress) {
          signal?.throwIfAborted();
          counts.push(await this.#sealStage(client, row));
        }
        await client.query(q.lockKey, [q.swapLockKey(schema)]);
        // No column may be added to posts between the check of the stages' columns and their attachment.
        await client.query(q.lockKey, [q.ddlLockKey(schema)]);
        const starts = sorted.map((w) => w.start);
        const ends = sorted.map((w) => w.end);
        const replaced = await client.query<{ start: string; end: string; covered: boolean }>(
          q.replacedWindows(schema),
          // Sorted and disjoint: the last window ends last.
          [starts, ends, starts[0], ends[ends.length - 1], q.qualified(schema, 'posts')],
        );
        const uncovered = replaced.rows.filter((r) => !r.covered);
        if (uncovered.length > 0) {
          throw new StoreError(
            'SCHEMA_MISMATCH',
            `loaded window ${uncovered.map((r) => `${r.start}..${r.end}`).join(', ')} is only partly covered by ${sorted.map(label).join(', ')}: commit windows that cover it entirely`,
          );
        }
        if (replaced.rows.length > 0) await this.#lockForReplace(client, signal);
        for (const old of replaced.rows) {
          await client.query(q.dropTable(schema, q.partitionName(SEGMENTS, old.start, old.end)));
          await client.query(q.dropTable(schema, q.partitionName(POSTS, old.start, old.end)));
        }
        const postsColumns = await columnsOf(client, schema, POSTS);
        let total = 0;
        for (let i = 0; i < sorted.length; i++) {
          signal?.throwIfAborted();
          const window = sorted[i]!;
          const row = progress[i]!;
          await this.#fitToPosts(client, row.stage_posts, postsColumns);
          await this.#attach(client, POSTS, row.stage_posts, window);
          await this.#attach(client, SEGMENTS, row.stage_segments, window);
          total += counts[i]!;
          await client.query(q.markLoaded(schema), [
            window.start,
            window.end,
            row.report_id,
            row.pages_staged,
            counts[i]!,
            options.today ?? null,
          ]);
        }
        const isNew = new Set(sorted.map((w) => `${w.start}/${w.end}`));
        const gone = replaced.rows.filter((r) => !isNew.has(`${r.start}/${r.end}`));
        if (gone.length > 0) {
          await client.query(q.deleteReportWindows(schema), [
            gone.map((r) => r.start),
            gone.map((r) => r.end),
          ]);
        }
        for (const window of sorted) await client.query(q.deleteProgress(schema), [window.start, window.end]);
        return total;
      });
      return { rows };
    } catch (error) {
      throw asStoreError(what, error);
    }
  }

  /** Drops the stage of a window and its progress; what is loaded and report_windows stay as they are. */
  async discardWindow(window: WindowKey): Promise<void> {
    checkWindow(window);
    const { schema } = this.#target;
    const names = stageNames(window);
    try {
      await withTransaction(this.#pool, undefined, async (client) => {
        await client.query(q.lockKey, [q.windowLockKey(schema, window.start, window.end)]);
        await client.query(q.dropTable(schema, names.posts));
        await client.query(q.dropTable(schema, names.segments));
        await client.query(q.deleteProgress(schema), [window.start, window.end]);
      });
    } catch (error) {
      throw asStoreError(`discarding window ${label(window)}`, error);
    }
  }

  /**
   * Gives a completely staged window its primary keys and drops `_seq`; returns its post count. A post id
   * repeated within the report fails the key: then the earlier occurrences and their segments are deleted first.
   */
  async #sealStage(client: pg.PoolClient, row: ProgressRow): Promise<number> {
    const { schema, postIdField } = this.#target;
    let rows = Number(row.rows_staged);
    await client.query(q.savepoint('seal'));
    try {
      await client.query(q.addPrimaryKey(schema, row.stage_posts, [postIdField, '_window_start']));
    } catch (error) {
      if (sqlState(error) !== UNIQUE_VIOLATION) throw error;
      await client.query(q.rollbackToSavepoint('seal'));
      const deleted = await client.query(q.deleteEarlierOccurrences(schema, row.stage_posts, postIdField));
      await client.query(q.deleteOrphanSegments(schema, row.stage_segments, row.stage_posts, postIdField));
      rows -= deleted.rowCount ?? 0;
      this.#logger.warn(
        { stage: row.stage_posts, occurrences: deleted.rowCount },
        'post ids repeated within the report: the last occurrence of each is kept',
      );
      await client.query(q.addPrimaryKey(schema, row.stage_posts, [postIdField, '_window_start']));
    }
    await client.query(q.releaseSavepoint('seal'));
    await client.query(
      q.addPrimaryKey(schema, row.stage_segments, [postIdField, '_window_start', 'name', 'value']),
    );
    await client.query(q.dropColumn(schema, row.stage_posts, '_seq'));
    await client.query(q.dropColumn(schema, row.stage_segments, '_seq'));
    return rows;
  }

  /**
   * Dropping a loaded window's partitions needs both parents to itself. Waiting for the second while holding
   * the first could deadlock with a reader that takes them the other way round, so the second is only tried
   * (NOWAIT); when it is busy the first is let go and the wait starts again.
   */
  async #lockForReplace(client: pg.PoolClient, signal?: AbortSignal): Promise<void> {
    const { schema } = this.#target;
    for (let attempt = 1; ; attempt++) {
      signal?.throwIfAborted();
      await client.query(q.savepoint('replace_lock'));
      // Bounded by lock_timeout: a reader that never lets go fails the window, it does not hang it.
      await client.query(q.lockExclusive(schema, POSTS, false));
      try {
        await client.query(q.lockExclusive(schema, SEGMENTS, true));
        await client.query(q.releaseSavepoint('replace_lock'));
        return;
      } catch (error) {
        if (sqlState(error) !== LOCK_NOT_AVAILABLE || attempt >= REPLACE_LOCK_ATTEMPTS) throw error;
        await client.query(q.rollbackToSavepoint('replace_lock'));
        await sleep(Math.min(10 * attempt, 500), undefined, signal ? { signal } : {});
      }
    }
  }

  // A partition has exactly its parent's columns and types: add the ones no page of this window needed, and
  // retype those posts changed since (bigint widened to numeric, a hand-set type staged as text).
  async #fitToPosts(client: pg.PoolClient, stage: string, posts: ReadonlyMap<string, string>): Promise<void> {
    const { schema } = this.#target;
    const have = await columnsOf(client, schema, stage);
    for (const name of have.keys()) {
      if (!posts.has(name)) {
        throw new StoreError(
          'SCHEMA_MISMATCH',
          `column ${JSON.stringify(name)} of the stage is missing from posts`,
        );
      }
    }
    for (const [name, type] of posts) {
      const current = have.get(name);
      if (current === undefined) await client.query(q.addColumn(schema, stage, name, type));
      else if (current !== type) await client.query(q.alterColumnType(schema, stage, name, type));
    }
  }

  async #attach(client: pg.PoolClient, parent: string, stage: string, window: WindowKey): Promise<void> {
    const { schema } = this.#target;
    const name = q.partitionName(parent, window.start, window.end);
    await client.query(q.attachPartition(schema, parent, stage, window.start));
    await client.query(q.renameTable(schema, stage, name));
    await client.query(q.renameIndex(schema, `${stage}_pkey`, `${name}_pkey`));
  }

  async #stageExists(client: pg.PoolClient, row: ProgressRow): Promise<boolean> {
    const { schema } = this.#target;
    const result = await client.query<{ posts: string | null; segments: string | null }>(q.stageTablesExist, [
      q.qualified(schema, row.stage_posts),
      q.qualified(schema, row.stage_segments),
    ]);
    const found = result.rows[0];
    return found?.posts != null && found.segments != null;
  }

  // The stage's columns follow posts: added when a page first needs them, retyped when posts widened.
  async #fitStageColumns(
    client: pg.PoolClient,
    stage: string,
    columns: readonly PageColumn[],
    types: readonly string[],
  ): Promise<void> {
    const { schema } = this.#target;
    const have = await columnsOf(client, schema, stage);
    for (let i = 0; i < columns.length; i++) {
      const column = columns[i]!;
      const want = types[i]!;
      const current = have.get(column.column);
      if (current === undefined) await client.query(q.addColumn(schema, stage, column.column, want));
      else if (current !== want) await client.query(q.alterColumnType(schema, stage, column.column, want));
    }
  }
}

// The SQL type each page column has in the stage: the posts column's type; a hand-set type is staged as text.
function stageTypes(columns: readonly PageColumn[], registry: Registry): string[] {
  return columns.map((column) => {
    const info = registry.byField.get(column.field)!;
    return info.type === 'other' ? 'text' : q.sqlType(info.type, info.sqlType);
  });
}

function pageColumns(fields: ReadonlyMap<string, unknown>, registry: Registry): PageColumn[] {
  const columns: PageColumn[] = [];
  for (const field of fields.keys()) {
    const info = registry.byField.get(field);
    if (!info?.exists)
      throw new StoreError('DB_ERROR', `field ${JSON.stringify(field)} has no column after schema evolution`);
    columns.push({ field, column: info.column, type: info.type });
  }
  return columns;
}

async function copyIn(client: pg.PoolClient, sql: string, text: string, signal?: AbortSignal): Promise<void> {
  if (text.length === 0) return;
  const stream = client.query(copyFrom(sql));
  await pipeline(Readable.from([Buffer.from(text, 'utf8')]), stream, signal ? { signal } : {});
}

async function columnsOf(client: pg.PoolClient, schema: string, table: string): Promise<Map<string, string>> {
  const result = await client.query<{ name: string; sql_type: string }>(q.readColumns, [
    q.qualified(schema, table),
  ]);
  return new Map(result.rows.map((r) => [r.name, r.sql_type]));
}

function checkWindow(window: WindowKey): void {
  if (!isIsoDate(window.start) || !isIsoDate(window.end) || window.end < window.start) {
    throw new StoreError(
      'DB_ERROR',
      `invalid window ${JSON.stringify(window)}: need dates YYYY-MM-DD, start <= end`,
    );
  }
}

const POSTS = 'posts';
// About a minute of tries in all (the backoff reaches 0.5 s).
const REPLACE_LOCK_ATTEMPTS = 150;
const SEGMENTS = 'post_custom_segments';

function stageNames(window: WindowKey): { posts: string; segments: string } {
  const base = q.partitionName('stage', window.start, window.end);
  return { posts: `${base}_posts`, segments: `${base}_segments` };
}

function label(window: WindowKey): string {
  return `${window.start}..${window.end}`;
}

function toProgress(row: ProgressRow): StageProgress {
  return {
    reportId: row.report_id,
    pagesStaged: row.pages_staged,
    nextPage: row.next_page,
    rowsStaged: Number(row.rows_staged),
  };
}
