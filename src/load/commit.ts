/*
 * Committing windows: in one transaction, the rows loaded before for those dates are deleted and each completely
 * staged window's rows are inserted, into the partition of their period (a window's segment values loaded before
 * and staged again are kept, the others deleted or inserted). MVCC shows readers the old windows or
 * the new ones, never a mix, and takes no lock that holds them; a killed connection leaves the old contents.
 */

import type pg from 'pg';
import { answeredWith } from '../error-policy.js';
import { StoreError } from '../errors.js';
import { byStart, sameWindow, type Window, windowLabel } from '../model/window.js';
import { asStoreError, withTransaction } from './database.js';
import { columnTypeOf } from './field-types.js';
import type { LoadContext } from './load-context.js';
import { commitLockKey, ddlLockKey, lockForTransaction } from './locks.js';
import {
  attachStages,
  ensurePartitions,
  fillNewPartitions,
  noPartitionError,
  PARTITIONED_TABLES,
  partitionsFound,
} from './period-partitions.js';
import * as queries from './queries.js';
import type { Scope } from './scope.js';
import { checkWindow, columnsOf, lockProgress, type ProgressRow } from './stage-progress.js';
import { forgetWindows, markLoaded } from './window-state.js';

export interface CommitOptions {
  /** The run's today (YYYY-MM-DD, UTC; default: the current date): a window reaching it is recorded as open. */
  today?: string;
  /**
   * Run inside the commit's transaction once it holds the commit lock, with the report each window's stage holds
   * (by start): throws when what the commit stands on (the run's locks, held by other sessions) is gone, so that
   * nothing is committed without it.
   */
  verify?: (client: pg.PoolClient, staged: readonly StagedReport[]) => Promise<void>;
}

/** A window and the report its stage holds, as a commit replaces it. */
export interface StagedReport extends Window {
  readonly reportId: string;
}

const POSTS = 'posts';
const SEGMENTS = 'post_custom_segments';

/** See Loader.commitWindows. */
export async function commitWindows(
  context: LoadContext,
  windows: readonly Window[],
  signal?: AbortSignal,
  options: CommitOptions = {},
): Promise<{ rows: number }> {
  if (windows.length === 0) return { rows: 0 };
  const sorted = disjoint(windows);
  try {
    signal?.throwIfAborted();
    const rows = await withTransaction(context.pool, signal, async (client) => {
      const stages = await completeStages(client, context.scope, sorted);
      // The segments are sorted by their key on the way in: in memory, not spilled to disk.
      await client.query(queries.commitSortMemory);
      const replaced = await replaceOld(client, context, sorted, stages, options.verify);
      let total = 0;
      for (const [i, stage] of stages.entries()) {
        signal?.throwIfAborted();
        const window = sorted[i]!;
        const rows = await insertWindow(client, context, window, stage);
        total += rows;
        await markLoaded(client, context.scope, window, {
          reportId: stage.report_id,
          pages: stage.pages_staged,
          rows,
          today: options.today ?? null,
        });
      }
      await forgetWindows(
        client,
        context.scope,
        replaced.filter((old) => !sorted.some((w) => sameWindow(w, old))),
      );
      return total;
    });
    return { rows };
  } catch (error) {
    throw asStoreError(`committing ${sorted.map(windowLabel).join(', ')}`, error);
  }
}

// The windows sorted by start; overlapping windows would count a date twice.
function disjoint(windows: readonly Window[]): Window[] {
  for (const window of windows) checkWindow(window);
  const sorted = [...windows].sort(byStart);
  for (let i = 1; i < sorted.length; i++) {
    if (sorted[i]!.start <= sorted[i - 1]!.end) {
      throw new StoreError(
        'SCHEMA_MISMATCH',
        `windows ${windowLabel(sorted[i - 1]!)} and ${windowLabel(sorted[i]!)} overlap`,
      );
    }
  }
  return sorted;
}

async function completeStages(
  client: pg.PoolClient,
  scope: Scope,
  windows: readonly Window[],
): Promise<ProgressRow[]> {
  const stages: ProgressRow[] = [];
  for (const window of windows) {
    const row = await lockProgress(client, scope, window);
    if (!row || row.pages_staged === 0 || row.next_page !== null) {
      throw new StoreError(
        'DB_ERROR',
        `window ${windowLabel(window)} is not completely staged (${row ? `${row.pages_staged} pages, next page pending` : 'not open'})`,
      );
    }
    stages.push(row);
  }
  return stages;
}

/**
 * Takes the commit's locks and deletes the rows of every loaded window the new ones overlap (the new windows'
 * own earlier loads included); each must be entirely covered by them, so that a date is never lost. Returns the
 * windows deleted.
 */
async function replaceOld(
  client: pg.PoolClient,
  context: LoadContext,
  sorted: readonly Window[],
  stages: readonly ProgressRow[],
  verify: CommitOptions['verify'],
): Promise<Window[]> {
  const { schema, org } = context.scope;
  await lockForTransaction(client, commitLockKey(schema));
  // Once the commits before this one are done: what this one stands on may have been lost while it waited.
  await verify?.(
    client,
    sorted.map((w, i) => ({ start: w.start, end: w.end, reportId: stages[i]!.report_id })),
  );
  // No column may be added to or retyped in posts between reading its columns and inserting the stages.
  await lockForTransaction(client, ddlLockKey(schema));
  // Nothing older replaces anything newer, whatever the windows' extents: another process may have loaded
  // newer rows for these dates while these were staged.
  const newer = await client.query<{ start: string; end: string; report_id: string; newer: string }>(
    queries.newerLoadedWindows(schema),
    [sorted.map((w) => w.start), sorted.map((w) => w.end), stages.map((s) => s.report_id), org],
  );
  const stale = newer.rows[0];
  if (stale !== undefined) {
    throw new StoreError(
      'REPORT_STALE',
      `report ${stale.report_id} of window ${windowLabel(stale)} is older than the rows loaded for ${stale.newer}: not committed; the next run asks for a new report`,
    );
  }
  const replaced = await client.query<{ start: string; end: string; covered: boolean }>(
    queries.replacedWindows(schema),
    [sorted.map((w) => w.start), sorted.map((w) => w.end), org],
  );
  const uncovered = replaced.rows.filter((r) => !r.covered);
  if (uncovered.length > 0) {
    throw new StoreError(
      'SCHEMA_MISMATCH',
      `loaded window ${uncovered.map(windowLabel).join(', ')} is only partly covered by ${sorted.map(windowLabel).join(', ')}: commit windows that cover it entirely`,
    );
  }
  const starts = [...new Set([...replaced.rows.map((r) => r.start), ...sorted.map((w) => w.start)])];
  await client.query(queries.deleteWindowRows(schema, POSTS), [org, starts]);
  // The segment values of a new window's dates are replaced by its insert (insertWindow), the others here.
  const gone = starts.filter((start) => !sorted.some((w) => w.start === start));
  if (gone.length > 0) await client.query(queries.deleteWindowRows(schema, SEGMENTS), [org, gone]);
  return replaced.rows.map(({ start, end }) => ({ start, end }));
}

/**
 * Inserts a window's stage into posts, replaces its segment values by the stage's, and drops the stage; returns
 * its post count. A post id repeated within the report fails the key: then the earlier occurrences and their
 * segments are deleted from the stage first.
 */
async function insertWindow(
  client: pg.PoolClient,
  context: LoadContext,
  window: Window,
  stage: ProgressRow,
): Promise<number> {
  const { schema, partitionPeriod = 'year' } = context.target;
  const columns = {
    posts: await insertColumns(client, schema, window, stage.stage_posts, POSTS),
    segments: await insertColumns(client, schema, window, stage.stage_segments, SEGMENTS),
  };
  let inserted: number;
  await client.query(queries.savepoint('insert'));
  try {
    inserted = await insertRows(client, context, window, stage, columns);
  } catch (error) {
    if (answeredWith(error, 'no partition for the row'))
      throw noPartitionError(window.start, partitionPeriod);
    if (!answeredWith(error, 'duplicate key')) throw error;
    await client.query(queries.rollbackToSavepoint('insert'));
    if (!(await keepLastOccurrences(client, context, window, stage))) throw error;
    inserted = await insertRows(client, context, window, stage, columns);
  }
  await client.query(queries.releaseSavepoint('insert'));
  await client.query(queries.dropTable(schema, stage.stage_posts));
  await client.query(queries.dropTable(schema, stage.stage_segments));
  await client.query(queries.deleteProgress(schema), [window.start, window.end, context.scope.org]);
  return inserted;
}

interface StageColumns {
  readonly posts: [string, string][];
  readonly segments: [string, string][];
}

/**
 * The stage's rows into the window's partitions: the first window of a period attaches its keyed stage as them
 * (attachStages), or else fills them before they have an index (fillNewPartitions); any other is inserted through
 * the parents, and a reload mostly stages the segment
 * values it loaded before, so only those that changed are deleted and inserted. Returns the post count.
 */
async function insertRows(
  client: pg.PoolClient,
  context: LoadContext,
  window: Window,
  stage: ProgressRow,
  columns: StageColumns,
): Promise<number> {
  const { schema, postIdField, partitionPeriod = 'year' } = context.target;
  const found = await partitionsFound(client, context.scope, partitionPeriod, window.start);
  if (found === 0) {
    const stages = { posts: stage.stage_posts, post_custom_segments: stage.stage_segments };
    if (await attachStages(client, context.scope, partitionPeriod, window.start, stages, postIdField)) {
      const posts = Number(stage.rows_staged);
      context.logger.debug(
        { window: windowLabel(window), posts },
        "the window's stage attached as its period's partitions",
      );
      return posts;
    }
    let posts = 0;
    const filled = await fillNewPartitions(
      client,
      context.scope,
      partitionPeriod,
      window.start,
      async (parent, table) => {
        const [from, list] =
          parent === POSTS ? [stage.stage_posts, columns.posts] : [stage.stage_segments, columns.segments];
        const result = await client.query(queries.insertFromStage(schema, table, from, list));
        if (parent === POSTS) posts = result.rowCount ?? 0;
      },
    );
    if (filled) {
      context.logger.debug(
        { window: windowLabel(window), posts },
        "the period's partitions made with the window's rows, their indexes built by the attach",
      );
      return posts;
    }
  }
  if (found < PARTITIONED_TABLES.length)
    await ensurePartitions(client, context.scope, partitionPeriod, window.start);
  const inserted = await client.query(
    queries.insertFromStage(schema, POSTS, stage.stage_posts, columns.posts),
  );
  const keys = [context.scope.org, window.start];
  await client.query(queries.deleteSegmentsNotStaged(schema, stage.stage_segments, postIdField), keys);
  await client.query(
    queries.insertSegmentsNotLoaded(schema, stage.stage_segments, postIdField, columns.segments),
    keys,
  );
  return inserted.rowCount ?? 0;
}

/**
 * Deletes from the stage the earlier occurrences of the post ids the report repeats, with their segments; false
 * when it repeats none.
 */
async function keepLastOccurrences(
  client: pg.PoolClient,
  context: LoadContext,
  window: Window,
  stage: ProgressRow,
): Promise<boolean> {
  const { schema, postIdField } = context.target;
  const deleted = await client.query(
    queries.deleteEarlierOccurrences(schema, stage.stage_posts, postIdField),
  );
  if (!deleted.rowCount) return false;
  await client.query(
    queries.deleteOrphanSegments(schema, stage.stage_segments, stage.stage_posts, postIdField),
  );
  context.logger.warn(
    { window: windowLabel(window), occurrences: deleted.rowCount },
    'post ids repeated within the report: the last occurrence of each is kept',
  );
  return true;
}

/**
 * The stage's columns, each with the type it has in the table (the stage's `_seq` aside). A column the table
 * lacks means posts lost it after the page was staged: the window cannot go in. So does a column retyped since
 * its values were staged, unless the cast gives what staging them again would: bigint into numeric (widened by
 * another window), bigint or numeric into text (numbers go into text in numeric::text's form: number-text.ts),
 * text into a type the loader does not know (staged as text anyway). Any other cast could change a value (a
 * string into jsonb), so the window fails and its next load stages it afresh.
 */
async function insertColumns(
  client: pg.PoolClient,
  schema: string,
  window: Window,
  stage: string,
  table: (typeof PARTITIONED_TABLES)[number],
): Promise<[string, string][]> {
  const target = await columnsOf(client, schema, table);
  const columns: [string, string][] = [];
  for (const [name, staged] of await columnsOf(client, schema, stage)) {
    if (name === '_seq') continue;
    const type = target.get(name);
    if (type === undefined) {
      throw new StoreError(
        'SCHEMA_MISMATCH',
        `column ${JSON.stringify(name)} of the stage is missing from ${table}`,
      );
    }
    if (!castKeepsValues(staged, type)) {
      throw new StoreError(
        'SCHEMA_MISMATCH',
        `column ${JSON.stringify(name)} of ${table} became ${type} while window ${windowLabel(window)} was staged as ${staged}: load the window again`,
      );
    }
    columns.push([name, type]);
  }
  return columns;
}

function castKeepsValues(staged: string, type: string): boolean {
  return (
    staged === type ||
    (staged === 'bigint' && type === 'numeric') ||
    ((staged === 'bigint' || staged === 'numeric') && type === 'text') ||
    (staged === 'text' && columnTypeOf(type) === 'other')
  );
}
