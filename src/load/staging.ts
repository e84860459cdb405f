/*
 * Staging a window: each page is COPYed into the window's two stage tables, with its resume progress in
 * stage_progress written in the same transaction, so that stage and progress always agree.
 */

import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type pg from 'pg';
import { from as copyFrom } from 'pg-copy-streams';
import { answeredWith, refusedWhatWasWritten } from '../error-policy.js';
import { DataError, StoreError } from '../errors.js';
import { type PagePosts, PageTape } from '../model/page-tape.js';
import { type Window, windowLabel } from '../model/window.js';
import { type EncodeStats, encodePage, MAX_PAGE_ROWS, type PageColumn } from './copy-encoding.js';
import { asStoreError, withTransaction } from './database.js';
import type { LoadContext } from './load-context.js';
import { lockForTransaction, windowLockKey } from './locks.js';
import { organizationKey } from './organization-keys.js';
import { periodToOpen } from './period-partitions.js';
import * as queries from './queries.js';
import {
  type ColumnBudget,
  DEFAULT_COLUMN_BUDGET,
  DEFAULT_WIDENINGS_PER_RUN,
  EXTRA_FIELDS_COLUMN,
  evolvePosts,
  type PagePlan,
  planPage,
  type Registry,
  readRegistry,
} from './schema-evolution.js';
import {
  alignColumns,
  checkWindow,
  lockProgress,
  lockProgressForPage,
  type ProgressRow,
  type StageProgress,
  stageNames,
  toProgress,
} from './stage-progress.js';
import { type PipelineStatement, StatementPipeline } from './statement-pipeline.js';
import { qualified } from './table-names.js';
import { type CopyPools, type EncodedPage, encodeTape } from './tape-encoding.js';
import { recordPagesStaged, recordStageReport } from './window-state.js';

/** One page of a report, as the extractor read it. */
export interface StagedPage {
  /** 0 for the first page, then 1, 2, … */
  index: number;
  /** The page's next_page token (null on the last page). */
  nextPage: string | null;
  posts: PagePosts;
  /**
   * The report the page is from: when given, the page is staged only while the window's stage is that report's.
   * Another process that took the window over (its claim lost) has opened a stage of its own report.
   */
  reportId?: string;
}

/** A page encoded for the stage by preparePage, to be written by writePage. */
export interface PreparedPage {
  readonly window: Window;
  readonly index: number;
  readonly nextPage: string | null;
  readonly reportId: string | undefined;
  readonly rows: number;
  readonly columns: readonly PageColumn[];
  /** The stage's SQL type of each column, in the order of `columns`. */
  readonly stageTypes: readonly string[];
  /** COPY text of the posts and of their segments, as UTF-8 (empty when none). */
  readonly posts: Buffer;
  readonly segments: Buffer;
  readonly nulReplaced: number;
  readonly surrogatesReplaced: number;
  /** The columns of posts the page was planned against: the next page of the attempt starts from them. */
  readonly registry: Registry;
}

export interface OpenWindowOptions {
  /** Filters recorded on a new report_windows row (default: the target's filters in sync_state). */
  filters?: unknown;
  /**
   * The attempt reads the report from its first page: a stage of an earlier reading of the same report is
   * discarded, not resumed. The API may hand back a report it served before (its reuse period), and a second
   * reading of it may order its posts differently across its pages: pages of two readings would lose posts.
   */
  fromFirstPage?: boolean;
}

/** See Loader.openWindow. */
export async function openWindow(
  context: LoadContext,
  window: Window,
  reportId: string,
  signal?: AbortSignal,
  options: OpenWindowOptions = {},
): Promise<StageProgress> {
  checkWindow(window);
  const { scope } = context;
  try {
    signal?.throwIfAborted();
    return await withTransaction(context.pool, signal, async (client) => {
      await lockForTransaction(client, windowLockKey(scope, window));
      await recordStageReport(client, scope, window, reportId, options.filters ?? null);
      const row = await lockProgress(client, scope, window);
      if (
        !options.fromFirstPage &&
        row &&
        row.report_id === reportId &&
        (await stageExists(client, scope.schema, row))
      ) {
        await recordPagesStaged(client, scope, window, row.pages_staged);
        const progress = toProgress(row);
        context.logger.info({ window: windowLabel(window), ...progress }, 'resuming staged window');
        return progress;
      }
      if (row) {
        context.logger.info(
          { window: windowLabel(window), oldReportId: row.report_id, reportId },
          row.report_id === reportId
            ? 'discarding the stage of an earlier reading of the report'
            : 'discarding the stage of another report',
        );
      }
      await createStage(client, context, window, reportId);
      await recordPagesStaged(client, scope, window, 0);
      return { reportId, pagesStaged: 0, nextPage: null, rowsStaged: 0 };
    });
  } catch (error) {
    throw asStoreError(`opening window ${windowLabel(window)}`, error);
  }
}

async function createStage(
  client: pg.PoolClient,
  context: LoadContext,
  window: Window,
  reportId: string,
): Promise<void> {
  const { postIdField } = context.target;
  const { schema, org } = context.scope;
  const names = stageNames(await organizationKey(client, context.scope), window);
  await client.query(queries.dropTable(schema, names.posts));
  await client.query(queries.dropTable(schema, names.segments));
  const of = { org, postId: postIdField, start: window.start, end: window.end, reportId };
  const period = await periodToOpen(
    client,
    context.scope,
    context.target.partitionPeriod ?? 'year',
    window.start,
  );
  if (period === null) {
    await client.query(queries.createStagePosts(schema, names.posts, of));
    await client.query(queries.createStageSegments(schema, names.segments, of));
  } else {
    await client.query(queries.createKeyedStagePosts(schema, names.posts, of, period));
    await client.query(queries.createKeyedStageSegments(schema, names.segments, of, period));
    await client.query(queries.createStageSegmentsKey(schema, names.segments, postIdField));
  }
  await client.query(queries.resetProgress(schema), [
    window.start,
    window.end,
    reportId,
    names.posts,
    names.segments,
    org,
  ]);
}

/** See Loader.preparePage. */
export async function preparePage(
  context: LoadContext,
  window: Window,
  page: StagedPage,
  signal?: AbortSignal,
  known?: Registry,
  pools?: CopyPools,
): Promise<PreparedPage> {
  checkWindow(window);
  if (page.posts.length >= MAX_PAGE_ROWS) {
    throw new StoreError(
      'DB_ERROR',
      `page ${page.index + 1} of window ${windowLabel(window)} has ${page.posts.length} posts, more than a page can hold`,
    );
  }
  try {
    signal?.throwIfAborted();
    const { fields, spilled, registry } = await evolveFor(context, window, page, known, signal);
    const columns = pageColumns(fields, spilled, registry);
    const stats: EncodeStats = { nulReplaced: 0, surrogatesReplaced: 0 };
    const text = encode(page.posts, page.index, columns, stats, pools);
    return {
      window: { start: window.start, end: window.end },
      index: page.index,
      nextPage: page.nextPage,
      reportId: page.reportId,
      rows: page.posts.length,
      columns,
      stageTypes: stageTypes(columns, registry),
      posts: text.posts,
      segments: text.segments,
      nulReplaced: stats.nulReplaced,
      surrogatesReplaced: stats.surrogatesReplaced,
      registry,
    };
  } catch (error) {
    throw asStoreError(`staging window ${windowLabel(window)} page ${page.index + 1}`, error);
  }
}

/** A page's COPY text: from its tape where it was read in one pass, else from its mapped posts. */
function encode(
  posts: PagePosts,
  page: number,
  columns: readonly PageColumn[],
  stats: EncodeStats,
  pools: CopyPools | undefined,
): EncodedPage {
  if (posts instanceof PageTape) return encodeTape(posts, page, columns, stats, pools);
  const text = encodePage(posts, page, columns, stats);
  return {
    posts: Buffer.from(text.posts, 'utf8'),
    segments: Buffer.from(text.segments, 'utf8'),
    segmentRows: text.segmentRows,
  };
}

/*
 * Schema evolution of posts until the page's fields all have their columns. The page is planned against the
 * columns the previous page of the attempt was planned against, not the catalog read again: a page fits them
 * almost always, and reading the catalog for every page costs a round trip and a few dozen rows. Where they are
 * stale, the catalog decides: a page that needs a column or a wider type re-reads it under the DDL lock
 * (evolvePosts), a value they reject is checked against a fresh read before it fails the window, and a column
 * retyped meanwhile (by another process or by hand) is taken or refused at the commit (commit.ts).
 */
async function evolveFor(
  context: LoadContext,
  window: Window,
  page: StagedPage,
  known: Registry | undefined,
  signal?: AbortSignal,
): Promise<{ fields: ReadonlyMap<string, unknown>; spilled: readonly string[]; registry: Registry }> {
  const { pool, target, logger, declared } = context;
  // Messages count pages from 1, as the API's reader and the run's log do.
  const place = { window: windowLabel(window), page: page.index + 1 };
  const budget = (): ColumnBudget => ({
    columns: target.columnBudget ?? DEFAULT_COLUMN_BUDGET,
    org: context.scope.org,
    wideningsLeft: Math.max(
      0,
      (target.wideningsPerRun ?? DEFAULT_WIDENINGS_PER_RUN) - context.columns.widenings,
    ),
  });
  let registry = known ?? (await readRegistry(pool, target));
  let plan: PagePlan;
  try {
    plan = planPage(page.posts, registry, place, declared, budget());
  } catch (error) {
    if (known === undefined || !(error instanceof DataError)) throw error;
    // An operator may have widened the column since, as the error tells them to.
    registry = await readRegistry(pool, target);
    plan = planPage(page.posts, registry, place, declared, budget());
  }
  for (let round = 0; plan.changes.length > 0; round++) {
    if (round >= 5) {
      throw new StoreError(
        'DB_ERROR',
        `columns for window ${windowLabel(window)} page ${page.index + 1} keep changing`,
      );
    }
    signal?.throwIfAborted();
    const room = budget();
    registry = await evolvePosts(
      pool,
      target,
      logger,
      plan.changes,
      signal,
      [...declared.keys(), ...plan.fields.keys(), ...plan.spilled],
      { budget: room, declared },
    );
    context.columns.widenings += plan.changes.filter((change) => change.action === 'widen').length;
    plan = planPage(page.posts, registry, place, declared, budget());
  }
  if (plan.spilled.length > 0) logKept(context, plan.spilled);
  return { fields: plan.fields, spilled: plan.spilled, registry };
}

/** Names, once a run, the fields kept in the extra column, and why. */
function logKept(context: LoadContext, spilled: readonly string[]): void {
  const fresh = spilled.filter((field) => !context.columns.kept.has(field));
  if (fresh.length === 0) return;
  for (const field of fresh) context.columns.kept.add(field);
  context.logger.warn(
    {
      count: fresh.length,
      fields: fresh,
      columnBudget: context.target.columnBudget ?? DEFAULT_COLUMN_BUDGET,
      wideningsPerRun: context.target.wideningsPerRun ?? DEFAULT_WIDENINGS_PER_RUN,
    },
    `fields without a column of their own (column budget, or widenings a run may make, reached): kept in ${EXTRA_FIELDS_COLUMN}`,
  );
}

/** What a window's writer knows of its stage from the page it wrote before (see writePage). */
export interface StageShape {
  readonly reportId: string;
  readonly posts: string;
  readonly segments: string;
  /** The posts stage's columns and their SQL types. */
  readonly columns: ReadonlyMap<string, string>;
}

/** See Loader.writePage. */
export async function writePage(
  context: LoadContext,
  prepared: PreparedPage,
  signal?: AbortSignal,
  known?: StageShape,
): Promise<StageShape | undefined> {
  const { window, index } = prepared;
  const place = { window: windowLabel(window), page: index + 1 };
  try {
    signal?.throwIfAborted();
    let shape = known;
    const pipelined =
      known !== undefined &&
      fits(known, prepared) &&
      (await stagedPipelined(context, prepared, known, signal));
    if (!pipelined) {
      shape = await stageCarefully(context, prepared, signal);
      if (shape === undefined) {
        context.logger.debug({ ...place }, 'page already staged: skipped');
        return undefined;
      }
    }
    if (prepared.nulReplaced > 0) {
      context.logger.warn({ ...place, count: prepared.nulReplaced }, 'NUL characters replaced by U+FFFD');
    }
    if (prepared.surrogatesReplaced > 0) {
      context.logger.warn(
        { ...place, count: prepared.surrogatesReplaced },
        'lone surrogates replaced by U+FFFD',
      );
    }
    context.logger.debug({ ...place, posts: prepared.rows, pipelined }, 'page staged');
    return shape;
  } catch (error) {
    throw asStoreError(`staging window ${windowLabel(window)} page ${index + 1}`, error);
  }
}

/**
 * The page with its stage's progress read and locked first, its columns aligned, then its COPYs and progress:
 * undefined for a page already staged, else the stage as the page leaves it.
 */
async function stageCarefully(
  context: LoadContext,
  prepared: PreparedPage,
  signal: AbortSignal | undefined,
): Promise<StageShape | undefined> {
  const { window, index } = prepared;
  const stage = () =>
    withTransaction(context.pool, { signal, begin: queries.beginStagingPage }, async (client) => {
      const found = await lockProgressForPage(client, context.scope, window);
      if (!nextInLine(found?.row, prepared)) return undefined;
      const { row, stageColumns } = found!;
      const columns = await copyPage(client, context, row, stageColumns, prepared, signal);
      return { reportId: row.report_id, posts: row.stage_posts, segments: row.stage_segments, columns };
    });
  try {
    return await stage();
  } catch (error) {
    // Only a keyed stage has a key to violate (createStage): the report repeats a post id, and the commit
    // keeps its last occurrence, as it does for any stage.
    if (!answeredWith(error, 'duplicate key')) throw error;
    await unkey(context, window, signal);
    context.logger.debug(
      { window: windowLabel(window), page: index + 1 },
      'a post id repeated within the report: the stage is no longer keyed',
    );
    return await stage();
  }
}

/** Whether the stage has every column of the page, typed as the page's values are staged. */
function fits(known: StageShape, prepared: PreparedPage): boolean {
  return prepared.columns.every((c, i) => known.columns.get(c.column) === prepared.stageTypes[i]);
}

/**
 * The page into the stage as the page before left it, its statements sent together (StatementPipeline: BEGIN,
 * them, then COMMIT: two round trips where the careful way takes eight): its progress advanced only if it is next in
 * line, then its COPYs, committed only if it was. False, having written nothing,
 * when it was not or the stage refused its rows: stageCarefully then tells a page already staged, a gap, another
 * report's stage, a column changed since or a repeated post id apart.
 */
async function stagedPipelined(
  context: LoadContext,
  prepared: PreparedPage,
  known: StageShape,
  signal: AbortSignal | undefined,
): Promise<boolean> {
  const { schema, postIdField } = context.target;
  // The transaction opens with the page's statements: sent apart, BEGIN would wait for its answer while this
  // process encodes the next page, and the server would have nothing to write meanwhile.
  const statements: PipelineStatement[] = [
    ...queries.stagingPageOpeners.map((sql) => ({ sql })),
    {
      sql: queries.advancePageInLine(schema),
      values: [...advanceValues(context, prepared), prepared.reportId ?? known.reportId, known.posts],
    },
  ];
  if (prepared.posts.length > 0) {
    const names = prepared.columns.map((c) => c.column);
    statements.push({
      copy: queries.copyStagePosts(schema, known.posts, postIdField, names),
      data: prepared.posts,
    });
  }
  if (prepared.segments.length > 0) {
    statements.push({
      copy: queries.copyStageSegments(schema, known.segments, postIdField),
      data: prepared.segments,
    });
  }
  try {
    await withTransaction(context.pool, { signal, begin: null }, async (client) => {
      const pipeline = new StatementPipeline(statements);
      client.query(pipeline);
      const advanced = (await pipeline.done)[queries.stagingPageOpeners.length];
      // Rolled back: the COPYs went in behind an advance that did not happen.
      if (advanced !== 1) throw notInLine();
    });
    return true;
  } catch (error) {
    if (error instanceof NotInLine || refusedWhatWasWritten(error)) return false;
    throw error;
  }
}

/** The page is not next in line of the stage as its writer knew it: the careful way tells why. */
class NotInLine extends Error {}
const notInLine = (): Error =>
  new NotInLine('the page is not next in line of the stage as its writer knew it');

async function unkey(context: LoadContext, window: Window, signal?: AbortSignal): Promise<void> {
  const { scope } = context;
  await withTransaction(context.pool, signal, async (client) => {
    const row = await lockProgress(client, scope, window);
    if (row) await client.query(queries.dropStageKeys(scope.schema, row.stage_posts, row.stage_segments));
  });
}

// False for a page already staged (a retry after a lost acknowledgement); a gap is an error.
function nextInLine(row: ProgressRow | undefined, prepared: PreparedPage): row is ProgressRow {
  const { window, index } = prepared;
  const label = windowLabel(window);
  if (!row) throw new StoreError('DB_ERROR', `window ${label} is not open: call openWindow first`);
  if (prepared.reportId !== undefined && row.report_id !== prepared.reportId) {
    throw new StoreError(
      'DB_ERROR',
      `window ${label}: its stage is now report ${row.report_id}'s, not ${prepared.reportId}'s: page ${index + 1} is not staged`,
    );
  }
  if (index < row.pages_staged) return false;
  if (index > row.pages_staged) {
    throw new StoreError(
      'DB_ERROR',
      `window ${label}: page ${index + 1} arrived but ${row.pages_staged + 1} is next`,
    );
  }
  if (row.pages_staged > 0 && row.next_page === null) {
    throw new StoreError('DB_ERROR', `window ${label}: page ${index + 1} arrived after the last page`);
  }
  return true;
}

/** Returns the posts stage's columns after the page. */
async function copyPage(
  client: pg.PoolClient,
  context: LoadContext,
  row: ProgressRow,
  have: ReadonlyMap<string, string>,
  prepared: PreparedPage,
  signal?: AbortSignal,
): Promise<Map<string, string>> {
  const { schema, postIdField } = context.target;
  const { columns } = prepared;
  // The stage's columns follow posts: added when a page first needs them, retyped when posts widened.
  const want = columns.map((column, i) => [column.column, prepared.stageTypes[i]!] as const);
  await alignColumns(client, schema, row.stage_posts, have, want);
  const names = columns.map((c) => c.column);
  await copyIn(
    client,
    queries.copyStagePosts(schema, row.stage_posts, postIdField, names),
    prepared.posts,
    signal,
  );
  await copyIn(
    client,
    queries.copyStageSegments(schema, row.stage_segments, postIdField),
    prepared.segments,
    signal,
  );
  await client.query(queries.advancePage(schema), advanceValues(context, prepared));
  return new Map([...have, ...want]);
}

/** The parameters of advancePage (and the first six of advancePageInLine) for a page written. */
function advanceValues(context: LoadContext, prepared: PreparedPage): (string | number | null)[] {
  const { window, index } = prepared;
  return [window.start, window.end, index + 1, prepared.nextPage, prepared.rows, context.scope.org];
}

async function stageExists(client: pg.PoolClient, schema: string, row: ProgressRow): Promise<boolean> {
  const result = await client.query<{ posts: string | null; segments: string | null }>(
    queries.stageTablesExist,
    [qualified(schema, row.stage_posts), qualified(schema, row.stage_segments)],
  );
  const found = result.rows[0];
  return found?.posts != null && found.segments != null;
}

// The SQL type each page column has in the stage: the posts column's type; a hand-set type is staged as text.
function stageTypes(columns: readonly PageColumn[], registry: Registry): string[] {
  return columns.map((column) => {
    if (column.fields !== undefined) return 'jsonb';
    const info = registry.byField.get(column.field)!;
    return info.type === 'other' ? 'text' : queries.sqlType(info.type, info.sqlType);
  });
}

function pageColumns(
  fields: ReadonlyMap<string, unknown>,
  spilled: readonly string[],
  registry: Registry,
): PageColumn[] {
  const columns: PageColumn[] = [];
  for (const field of fields.keys()) {
    const info = registry.byField.get(field);
    if (!info?.exists)
      throw new StoreError('DB_ERROR', `field ${JSON.stringify(field)} has no column after schema evolution`);
    columns.push({ field, column: info.column, type: info.type });
  }
  if (spilled.length > 0)
    columns.push({ field: '', column: EXTRA_FIELDS_COLUMN, type: 'jsonb', fields: spilled });
  return columns;
}

async function copyIn(client: pg.PoolClient, sql: string, text: Buffer, signal?: AbortSignal): Promise<void> {
  if (text.length === 0) return;
  const stream = client.query(copyFrom(sql));
  await pipeline(Readable.from([text]), stream, signal ? { signal } : {});
}
