/*
 * Committing windows: each completely staged window gets its primary keys, then in one transaction the partitions
 * of the windows loaded before for those dates are dropped and the stages attached in their place. Readers see the
 * old windows or the new ones, never a mix; a killed connection leaves the old contents.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import type pg from 'pg';
import { StoreError } from '../errors.js';
import { byStart, sameWindow, type Window, windowLabel } from '../model/window.js';
import { asStoreError, withTransaction } from './database.js';
import type { LoadContext } from './load-context.js';
import { ddlLockKey, lockForTransaction, swapLockKey } from './locks.js';
import { LOCK_NOT_AVAILABLE, sqlState, UNIQUE_VIOLATION } from './pg-error-codes.js';
import * as queries from './queries.js';
import { alignColumns, checkWindow, columnsOf, lockProgress, type ProgressRow } from './stage-progress.js';
import { partitionName, qualified } from './table-names.js';
import { forgetWindows, markLoaded } from './window-state.js';

export interface CommitOptions {
  /** The run's today (YYYY-MM-DD, UTC; default: the current date): a window reaching it is recorded as open. */
  today?: string;
}

const POSTS = 'posts';
const SEGMENTS = 'post_custom_segments';
// About a minute of tries in all (the backoff reaches 0.5 s).
const REPLACE_LOCK_ATTEMPTS = 150;

/** A window ready to attach: its stage and its post count once sealed. */
interface SealedWindow {
  readonly window: Window;
  readonly stage: ProgressRow;
  readonly rows: number;
}

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
      const stages = await completeStages(client, context.target.schema, sorted);
      // The keys are built before the swap's locks: each stage is this transaction's alone.
      const sealed: SealedWindow[] = [];
      for (const [i, stage] of stages.entries()) {
        signal?.throwIfAborted();
        sealed.push({ window: sorted[i]!, stage, rows: await sealStage(client, context, stage) });
      }
      const replaced = await replaceOld(client, context, sorted, signal);
      const total = await attachAll(client, context, sealed, options, signal);
      await forgetWindows(
        client,
        context.target.schema,
        replaced.filter((old) => !sorted.some((w) => sameWindow(w, old))),
      );
      for (const window of sorted) {
        await client.query(queries.deleteProgress(context.target.schema), [window.start, window.end]);
      }
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
  schema: string,
  windows: readonly Window[],
): Promise<ProgressRow[]> {
  const stages: ProgressRow[] = [];
  for (const window of windows) {
    const row = await lockProgress(client, schema, window);
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
 * Takes the swap's locks and drops the partitions of every loaded window the new ones overlap; each must be
 * entirely covered by them, so that a date is never lost. Returns the windows dropped.
 */
async function replaceOld(
  client: pg.PoolClient,
  context: LoadContext,
  sorted: readonly Window[],
  signal?: AbortSignal,
): Promise<Window[]> {
  const { schema } = context.target;
  await lockForTransaction(client, swapLockKey(schema));
  // No column may be added to posts between the check of the stages' columns and their attachment.
  await lockForTransaction(client, ddlLockKey(schema));
  const starts = sorted.map((w) => w.start);
  const ends = sorted.map((w) => w.end);
  const replaced = await client.query<{ start: string; end: string; covered: boolean }>(
    queries.replacedWindows(schema),
    // Sorted and disjoint: the last window ends last.
    [starts, ends, starts[0], ends[ends.length - 1], qualified(schema, POSTS)],
  );
  const uncovered = replaced.rows.filter((r) => !r.covered);
  if (uncovered.length > 0) {
    throw new StoreError(
      'SCHEMA_MISMATCH',
      `loaded window ${uncovered.map(windowLabel).join(', ')} is only partly covered by ${sorted.map(windowLabel).join(', ')}: commit windows that cover it entirely`,
    );
  }
  if (replaced.rows.length > 0) await lockForReplace(client, schema, signal);
  for (const old of replaced.rows) {
    await client.query(queries.dropTable(schema, partitionName(SEGMENTS, old.start, old.end)));
    await client.query(queries.dropTable(schema, partitionName(POSTS, old.start, old.end)));
  }
  return replaced.rows.map(({ start, end }) => ({ start, end }));
}

async function attachAll(
  client: pg.PoolClient,
  context: LoadContext,
  sealed: readonly SealedWindow[],
  options: CommitOptions,
  signal?: AbortSignal,
): Promise<number> {
  const { schema } = context.target;
  const postsColumns = await columnsOf(client, schema, POSTS);
  let total = 0;
  for (const { window, stage, rows } of sealed) {
    signal?.throwIfAborted();
    await fitToPosts(client, schema, stage.stage_posts, postsColumns);
    await attach(client, schema, POSTS, stage.stage_posts, window);
    await attach(client, schema, SEGMENTS, stage.stage_segments, window);
    total += rows;
    await markLoaded(client, schema, window, {
      reportId: stage.report_id,
      pages: stage.pages_staged,
      rows,
      today: options.today ?? null,
    });
  }
  return total;
}

/**
 * Gives a completely staged window its primary keys and drops `_seq`; returns its post count. A post id
 * repeated within the report fails the key: then the earlier occurrences and their segments are deleted first.
 */
async function sealStage(client: pg.PoolClient, context: LoadContext, row: ProgressRow): Promise<number> {
  const { schema, postIdField } = context.target;
  let rows = Number(row.rows_staged);
  await client.query(queries.savepoint('seal'));
  try {
    await client.query(queries.addPrimaryKey(schema, row.stage_posts, [postIdField, '_window_start']));
  } catch (error) {
    if (sqlState(error) !== UNIQUE_VIOLATION) throw error;
    await client.query(queries.rollbackToSavepoint('seal'));
    const deleted = await client.query(
      queries.deleteEarlierOccurrences(schema, row.stage_posts, postIdField),
    );
    await client.query(
      queries.deleteOrphanSegments(schema, row.stage_segments, row.stage_posts, postIdField),
    );
    rows -= deleted.rowCount ?? 0;
    context.logger.warn(
      { stage: row.stage_posts, occurrences: deleted.rowCount },
      'post ids repeated within the report: the last occurrence of each is kept',
    );
    await client.query(queries.addPrimaryKey(schema, row.stage_posts, [postIdField, '_window_start']));
  }
  await client.query(queries.releaseSavepoint('seal'));
  await client.query(
    queries.addPrimaryKey(schema, row.stage_segments, [postIdField, '_window_start', 'name', 'value']),
  );
  await client.query(queries.dropColumn(schema, row.stage_posts, '_seq'));
  await client.query(queries.dropColumn(schema, row.stage_segments, '_seq'));
  return rows;
}

/**
 * Dropping a loaded window's partitions needs both parents to itself. Waiting for the second while holding
 * the first could deadlock with a reader that takes them the other way round, so the second is only tried
 * (NOWAIT); when it is busy the first is let go and the wait starts again.
 */
async function lockForReplace(client: pg.PoolClient, schema: string, signal?: AbortSignal): Promise<void> {
  for (let attempt = 1; ; attempt++) {
    signal?.throwIfAborted();
    await client.query(queries.savepoint('replace_lock'));
    // Bounded by lock_timeout: a reader that never lets go fails the window, it does not hang it.
    await client.query(queries.lockExclusive(schema, POSTS, false));
    try {
      await client.query(queries.lockExclusive(schema, SEGMENTS, true));
      await client.query(queries.releaseSavepoint('replace_lock'));
      return;
    } catch (error) {
      if (sqlState(error) !== LOCK_NOT_AVAILABLE || attempt >= REPLACE_LOCK_ATTEMPTS) throw error;
      await client.query(queries.rollbackToSavepoint('replace_lock'));
      await sleep(Math.min(10 * attempt, 500), undefined, signal ? { signal } : {});
    }
  }
}

// A partition has exactly its parent's columns and types: add the ones no page of this window needed, and
// retype those posts changed since (bigint widened to numeric, a hand-set type staged as text).
async function fitToPosts(
  client: pg.PoolClient,
  schema: string,
  stage: string,
  posts: ReadonlyMap<string, string>,
): Promise<void> {
  const have = await columnsOf(client, schema, stage);
  for (const name of have.keys()) {
    if (!posts.has(name)) {
      throw new StoreError(
        'SCHEMA_MISMATCH',
        `column ${JSON.stringify(name)} of the stage is missing from posts`,
      );
    }
  }
  await alignColumns(client, schema, stage, have, posts);
}

async function attach(
  client: pg.PoolClient,
  schema: string,
  parent: string,
  stage: string,
  window: Window,
): Promise<void> {
  const name = partitionName(parent, window.start, window.end);
  await client.query(queries.attachPartition(schema, parent, stage, window.start));
  await client.query(queries.renameTable(schema, stage, name));
  await client.query(queries.renameIndex(schema, `${stage}_pkey`, `${name}_pkey`));
}
