import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import pLimit from 'p-limit';
import type pg from 'pg';
import { ApiClient } from '../api/client.js';
import type { Config } from '../config.js';
import { ApiError, ConfigError, EtlError, oneLine, StoreError } from '../errors.js';
import { validateFilters } from '../extract/dimensions.js';
import { ALL_FIELDS, fieldFilter } from '../extract/field-selection.js';
import { canonicalFilters, type Filters } from '../extract/filters.js';
import { type ReportPage, readPages } from '../extract/pager.js';
import { mapRecords } from '../extract/record-mapping.js';
import { createReport, waitForReport } from '../extract/report.js';
import { asStoreError, createPool, deadlineHint, withTransaction } from '../load/database.js';
import { Loader } from '../load/loader.js';
import { acquireRunLock } from '../load/locks.js';
import { migrate } from '../load/migrate.js';
import { sqlState, UNDEFINED_TABLE } from '../load/pg-error-codes.js';
import { applyFieldSelection, readStoredFields } from '../load/stored-fields.js';
import {
  endAttempt,
  firstLoadedDate,
  loadedWindows,
  type ResetCounts,
  readTarget,
  readWindow,
  recordReport,
  resetTarget,
  type SyncState,
  setCursor,
  startAttempt,
  writeTarget,
} from '../load/window-state.js';
import type { Logger } from '../logger.js';
import { dayBefore } from '../model/dates.js';
import { byStart, type Window, windowLabel } from '../model/window.js';
import { VERSION } from '../version.js';
import { exitFor } from './exit-codes.js';
import { preflight } from './preflight.js';
import { RunStop } from './run-stop.js';
import type { ProgressEvent, RunStatus, RunSummary, WindowFailure } from './run-summary.js';
import { checkFieldSelection } from './target-fields.js';
import { Watchdog } from './watchdog.js';
import { planWindows, type WindowGroup } from './windows.js';

/** What every run needs: configuration, a logger, and optionally a way to stop it and to watch it. */
export interface RunContext {
  readonly config: Config;
  readonly logger: Logger;
  readonly signal?: AbortSignal;
  readonly onProgress?: (event: ProgressEvent) => void;
}

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

const NOTHING_LOADED: LoadedHistory = { cursor: null, firstLoaded: null };

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

interface Counters {
  /** Posts committed (not merely staged). */
  posts: number;
  pages: number;
  reportsCreated: number;
  loaded: number;
  retries: number;
}

/** A run ready to load: its range, its plan and the state it starts from. */
interface PreparedRun {
  readonly range: RunRange;
  readonly groups: readonly WindowGroup[];
  readonly skipped: number;
  readonly cursor: string | null;
  readonly reset?: ResetCounts;
}

interface LoadOutcome {
  readonly failures: WindowFailure[];
  readonly interrupted: number;
}

/**
 * Runs the windows of a request: creates (or resumes) a report per window, streams its pages into the stage, and
 * commits each group of windows atomically. Failing windows are retried, then reported; they never stop the others.
 */
export async function executeRun(outer: RunContext, request: RunRequest): Promise<RunSummary> {
  const { config } = outer;
  // Everything of the run listens to the stop's signal: SIGINT/SIGTERM, or a token the API rejects.
  const stop = new RunStop(outer.signal);
  const signal = stop.signal;
  const context: RunContext = { ...outer, signal };
  const started = Date.now();
  const logger = context.logger.child({ runId: randomUUID(), command: request.command });
  const filters = canonicalFilters(config.run.filters);
  const counters: Counters = { posts: 0, pages: 0, reportsCreated: 0, loaded: 0, retries: 0 };
  const api = new ApiClient(config.api, logger, {
    onRetry: () => {
      counters.retries += 1;
    },
  });
  logger.info({ version: VERSION }, 'run started');
  const pool = createPool(config.db, logger, {
    max: config.run.concurrency + 2,
    applicationName: 'post-reports-etl',
  });
  try {
    const dimensions = await preflight(api, pool, config.db.schema, signal).catch((error: unknown) => {
      throw connectionError(config.db.url.reveal(), error);
    });
    validateFilters(filters, dimensions);
    const lock = await acquireRunLock(pool, config.db.schema, config.db.lockWaitMs, signal).catch(
      (error: unknown) => {
        throw connectionError(config.db.url.reveal(), error);
      },
    );
    try {
      const run = await prepareRun(pool, context, request, filters, logger);
      const target = { schema: config.db.schema, postIdField: config.api.postIdField };
      const loader = new Loader(pool, target, logger);
      const runWindow = new RunWindow(context, stop, api, loader, pool, filters, counters, logger);
      const outcome = await loadGroups(runWindow, run.groups, (group) =>
        loader.commitWindows(group, stop.child(), { today: request.today }),
      );
      const cursor =
        request.moveCursor && !signal.aborted
          ? await advanceCursor(pool, config.db.schema, run, outcome.failures)
          : run.cursor;
      const summary = summarize(request, run, outcome, counters, cursor, started, stop);
      if (stop.cause !== undefined)
        logger.error({ err: stop.cause }, 'run stopped: the API rejected the token');
      logger.info({ summary }, 'run finished');
      return summary;
    } finally {
      await lock.release();
    }
  } finally {
    await pool.end();
  }
}

/**
 * Decides the range and the windows to load. The range is decided before anything is written, so that a refused
 * run leaves the database as it was; a reset then clears the schema in one transaction.
 */
async function prepareRun(
  pool: pg.Pool,
  context: RunContext,
  request: RunRequest,
  filters: Filters,
  logger: Logger,
): Promise<PreparedRun> {
  const { config, signal } = context;
  const schema = config.db.schema;
  const stored = await peekTarget(pool, schema);
  const range = request.resolve(request.reset || stored === null ? NOTHING_LOADED : stored.history);
  checkTarget(stored?.target ?? null, config, filters, request.reset);
  const fields = checkFieldSelection(
    config,
    await readStoredFields(pool, schema, stored !== null),
    request.reset,
  );
  await migrate(pool, { schema, postIdField: config.api.postIdField }, logger, signal);
  let reset: ResetCounts | undefined;
  let cursor: string | null = null;
  if (request.reset) {
    reset = await withTransaction(pool, signal, async (client) => {
      const counts = await resetTarget(client, schema, config.api.postIdField, filters);
      await applyFieldSelection(client, schema, fields);
      return counts;
    });
    logger.warn({ reset }, 'starting over (--reset): the schema was cleared');
  } else if (stored === null) {
    await withTransaction(pool, signal, async (client) => {
      await writeTarget(client, schema, config.api.postIdField, filters);
      await applyFieldSelection(client, schema, fields);
    });
  } else {
    cursor = stored.target.cursorDate;
  }
  if (range.notice !== undefined) logger.warn(range.notice);
  const loaded = await loadedWindows(pool, schema);
  const plan = planWindows(range.windows, loaded, {
    reload: range.reload,
    ...(range.reloadFrom === undefined ? {} : { reloadFrom: range.reloadFrom }),
  });
  logger.info({ from: range.from, to: range.to }, 'range resolved');
  const planned = plan.groups.reduce((n, g) => n + g.length, 0);
  context.onProgress?.({ type: 'planned', windows: planned, skipped: plan.skipped.length });
  logger.info({ planned, skipped: plan.skipped.length, groups: plan.groups.length }, 'windows planned');
  return {
    range,
    groups: plan.groups,
    skipped: plan.skipped.length,
    cursor,
    ...(reset === undefined ? {} : { reset }),
  };
}

async function loadGroups(
  runWindow: RunWindow,
  groups: readonly WindowGroup[],
  commit: (group: WindowGroup) => Promise<{ rows: number }>,
): Promise<LoadOutcome> {
  const limit = pLimit(runWindow.concurrency);
  const failures: WindowFailure[] = [];
  let interrupted = 0;
  await Promise.all(
    groups.map(async (group) => {
      const outcome = await runGroup(runWindow, limit, group, commit);
      failures.push(...outcome.failures);
      interrupted += outcome.interrupted;
    }),
  );
  failures.sort(byStart);
  return { failures, interrupted };
}

/**
 * The cursor never passes a date that did not load: it stops the day before the first failed window, even when
 * that is before where it was (a reload that failed), so that the next sync tries those dates again.
 */
async function advanceCursor(
  pool: pg.Pool,
  schema: string,
  run: PreparedRun,
  failures: readonly WindowFailure[],
): Promise<string | null> {
  const { range, cursor } = run;
  const firstFailure = failures.map((f) => f.start).sort()[0];
  const reached =
    firstFailure !== undefined
      ? dayBefore(firstFailure)
      : cursor !== null && cursor > range.to
        ? cursor
        : range.to;
  if (cursor === null && reached < range.from) return null;
  await setCursor(pool, schema, reached);
  return reached;
}

function summarize(
  request: RunRequest,
  run: PreparedRun,
  outcome: LoadOutcome,
  counters: Counters,
  cursor: string | null,
  started: number,
  stop: RunStop,
): RunSummary {
  const { failures } = outcome;
  const stoppedBy = stop.cause;
  const interrupted = stop.signal.aborted;
  const status: RunStatus =
    stoppedBy !== undefined
      ? 'failed'
      : interrupted
        ? 'interrupted'
        : failures.length > 0
          ? 'partial'
          : 'succeeded';
  const exitCode = exitFor({ interrupted, failedWindows: failures.length, stoppedBy });
  return {
    command: request.command,
    version: VERSION,
    status,
    exitCode,
    from: run.range.from,
    to: run.range.to,
    windows: {
      planned: run.groups.reduce((n, g) => n + g.length, 0),
      loaded: counters.loaded,
      skipped: run.skipped,
      failed: failures.length,
      interrupted: outcome.interrupted,
    },
    posts: counters.posts,
    pages: counters.pages,
    retries: counters.retries,
    reportsCreated: counters.reportsCreated,
    durationMs: Date.now() - started,
    cursor,
    failures,
    ...(run.reset === undefined ? {} : { reset: run.reset }),
    ...(stoppedBy === undefined
      ? {}
      : { error: { code: stoppedBy.code, message: oneLine(stoppedBy.message) } }),
  };
}

/** A connection failure, named by host, port and database: never the user or password. */
function connectionError(url: string, error: unknown): unknown {
  if (error instanceof EtlError) return error;
  const state = sqlState(error);
  // Class 28: the server refused the role or its password; retrying cannot help, a person must fix the login.
  const refused = state?.startsWith('28') === true;
  let where = 'DATABASE_URL';
  try {
    const parsed = new URL(url);
    where = `${parsed.hostname}:${parsed.port || '5432'}${parsed.pathname}`;
  } catch {
    // An unparsable URL: the reason below says why.
  }
  // Any other SQLSTATE means PostgreSQL answered: its own message speaks for itself.
  if (!refused && /^[0-9A-Z]{5}$/.test(state ?? '')) return asStoreError(`PostgreSQL at ${where}`, error);
  const reason = error instanceof Error ? error.message : String(error);
  if (refused) {
    return new StoreError(
      'DB_LOGIN_REJECTED',
      `PostgreSQL at ${where} refused the login: ${oneLine(reason, 200)}`,
      {
        cause: error,
      },
    );
  }
  return new StoreError(
    'DB_ERROR',
    `cannot connect to PostgreSQL at ${where}: ${oneLine(reason, 200)}${deadlineHint(error)}`,
    { cause: error },
  );
}

/** The stored target and history, or null when the schema has not been set up yet. */
async function peekTarget(
  pool: pg.Pool,
  schema: string,
): Promise<{ target: SyncState; history: LoadedHistory } | null> {
  try {
    const target = await readTarget(pool, schema);
    if (target === null) return null;
    const firstLoaded = await firstLoadedDate(pool, schema);
    return { target, history: { cursor: target.cursorDate, firstLoaded } };
  } catch (error) {
    if (sqlState(error) === UNDEFINED_TABLE) return null;
    throw error;
  }
}

/** Refuses a run whose filters or post id field differ from what the schema was loaded with, unless resetting. */
function checkTarget(stored: SyncState | null, config: Config, filters: Filters, reset: boolean): void {
  if (stored === null) return;
  const schema = config.db.schema;
  if (stored.postIdField !== config.api.postIdField) {
    throw new ConfigError(
      'FILTERS_CHANGED',
      `schema "${schema}" was loaded with post id field "${stored.postIdField}", not "${config.api.postIdField}": use another schema`,
    );
  }
  const before = JSON.stringify(canonicalFilters(stored.filters));
  const now = JSON.stringify(filters);
  if (before !== now && !reset) {
    throw new ConfigError(
      'FILTERS_CHANGED',
      `schema "${schema}" was loaded with filters ${before}, this run has ${now}: pass --reset to clear it, or use another schema`,
    );
  }
}

async function runGroup(
  runWindow: RunWindow,
  limit: ReturnType<typeof pLimit>,
  group: WindowGroup,
  commit: (group: WindowGroup) => Promise<{ rows: number }>,
): Promise<LoadOutcome> {
  const signal = runWindow.signal;
  const results = await Promise.allSettled(group.map((w) => limit(() => runWindow.stage(w))));
  const failures: WindowFailure[] = [];
  let interrupted = 0;
  results.forEach((result, i) => {
    if (result.status === 'fulfilled') return;
    // A window stopped by SIGINT/SIGTERM has not failed: its report and stage wait for the next run.
    if (signal?.aborted) interrupted += 1;
    else failures.push(runWindow.failure(group[i] as Window, result.reason));
  });
  if (signal?.aborted) return { failures, interrupted: group.length - failures.length };
  if (failures.length > 0) {
    // A group commits whole or not at all; its windows that did stage are marked failed too.
    for (const [i, w] of group.entries()) {
      if (results[i]?.status === 'fulfilled') {
        const failure = {
          ...w,
          code: 'GROUP_FAILED',
          message: 'not committed: another window of its group failed',
        };
        failures.push(failure);
        await runWindow.markFailed(w, failure.message);
      }
    }
    return { failures, interrupted };
  }
  try {
    const started = Date.now();
    const { rows } = await commit(group);
    runWindow.committed(group, rows, Date.now() - started);
  } catch (error) {
    if (signal?.aborted) return { failures, interrupted: group.length };
    for (const w of group) {
      const failure = runWindow.failure(w, error);
      failures.push(failure);
      await runWindow.markFailed(w, failure.message);
    }
  }
  return { failures, interrupted };
}

/** What an attempt fetched and staged itself (pages staged by an earlier run it resumes are not counted). */
interface Staged {
  readonly posts: number;
  readonly pages: number;
}

/** One window's extraction and staging, with its attempts. */
class RunWindow {
  constructor(
    private readonly context: RunContext,
    private readonly stop: RunStop,
    private readonly api: ApiClient,
    private readonly loader: Loader,
    private readonly pool: pg.Pool,
    private readonly filters: Filters,
    private readonly counters: Counters,
    private readonly logger: Logger,
  ) {}

  private get schema(): string {
    return this.context.config.db.schema;
  }

  get signal(): AbortSignal | undefined {
    return this.context.signal;
  }

  get concurrency(): number {
    return this.context.config.run.concurrency;
  }

  failure(window: Window, error: unknown): WindowFailure {
    const code = error instanceof EtlError ? error.code : 'UNEXPECTED';
    const message = error instanceof Error ? oneLine(error.message) : oneLine(String(error));
    return { start: window.start, end: window.end, code, message };
  }

  async markInterrupted(window: Window, reason: unknown): Promise<void> {
    const message = reason instanceof Error ? reason.message : 'interrupted';
    try {
      await endAttempt(this.pool, this.schema, window, 'pending', oneLine(message));
    } catch (error) {
      this.logger.error({ err: error, window: windowLabel(window) }, 'could not record the interruption');
    }
  }

  async markFailed(window: Window, message: string): Promise<void> {
    try {
      await endAttempt(this.pool, this.schema, window, 'failed', message);
    } catch (error) {
      this.logger.error({ err: error, window: windowLabel(window) }, 'could not record the failure');
    }
  }

  committed(group: WindowGroup, rows: number, durationMs: number): void {
    this.counters.loaded += group.length;
    this.counters.posts += rows;
    for (const w of group) {
      this.context.onProgress?.({ type: 'window-loaded', window: w, posts: rows, durationMs });
    }
    this.logger.info({ windows: group.map(windowLabel), rows, commitMs: durationMs }, 'windows committed');
  }

  async stage(window: Window): Promise<void> {
    const { config } = this.context;
    const signal = this.stop.child();
    const log = this.logger.child({ window: windowLabel(window) });
    const attempts = config.run.windowAttempts;
    for (let attempt = 1; ; attempt += 1) {
      if (signal.aborted) throw new EtlError('ABORTED', 'the run was interrupted before this window started');
      const started = Date.now();
      this.context.onProgress?.({ type: 'window-started', window, attempt });
      log.info({ attempt }, 'window started');
      try {
        const { posts, pages } = await this.attempt(window, signal, log);
        log.info({ attempt, posts, pages, stageMs: Date.now() - started }, 'window staged');
        return;
      } catch (error) {
        // A rejected token stops every window now; this one too is interrupted, not failed.
        this.stop.check(error);
        const failure = this.failure(window, error);
        if (signal.aborted) {
          log.warn({ attempt }, 'window interrupted');
          await this.markInterrupted(window, signal.reason);
          throw error;
        }
        if (attempt >= attempts || !retryable(error)) {
          log.error({ attempt, code: failure.code, err: error }, 'window failed');
          await this.markFailed(window, failure.message);
          this.context.onProgress?.({ type: 'window-failed', window, error: failure.message });
          throw error;
        }
        log.warn({ attempt, code: failure.code, error: failure.message }, 'window attempt failed; retrying');
        await sleep(Math.min(30_000, 1000 * 2 ** (attempt - 1)), undefined, { signal }).catch(() => {});
      }
    }
  }

  private async attempt(window: Window, windowSignal: AbortSignal, log: Logger): Promise<Staged> {
    const { config } = this.context;
    const previous = await readWindow(this.pool, this.schema, window);
    await startAttempt(this.pool, this.schema, window, this.filters);
    const watchdog = new Watchdog(config.run.stallTimeoutMs, windowSignal);
    try {
      // Only the attempt in progress (interrupted, killed, or retried within this run) has a report to resume.
      // A new load or reload always asks the API for a report: an earlier one may hold figures since restated.
      const inProgress = previous?.attemptReportId ?? null;
      const resumed = inProgress === null ? null : await this.resume(window, inProgress, watchdog, log);
      if (resumed !== null) return resumed;
      watchdog.waitingFor('the report to be created');
      const { id } = await createReport(this.api, window, this.filters, watchdog.signal);
      this.counters.reportsCreated += 1;
      await recordReport(this.pool, this.schema, window, id);
      log.info({ reportId: id }, 'report created');
      const first = await this.waitFor(id, watchdog);
      await this.loader.openWindow(window, id, watchdog.signal);
      const pages = readPages(this.api, id, { first, signal: watchdog.signal });
      return await this.stagePages(window, id, pages, watchdog, log);
    } catch (error) {
      if (error instanceof ApiError && (error.code === 'REPORT_GONE' || error.code === 'REPORT_FAILED')) {
        // A report that is gone or failed is never polled again: the next attempt creates a new one.
        await recordReport(this.pool, this.schema, window, null);
      }
      throw watchdog.reason(error);
    } finally {
      watchdog.stop();
    }
  }

  /** Continues the attempt in progress with its report; null when that report is gone (create another). */
  private async resume(
    window: Window,
    reportId: string,
    watchdog: Watchdog,
    log: Logger,
  ): Promise<Staged | null> {
    const signal = watchdog.signal;
    const progress = await this.loader.openWindow(window, reportId, signal);
    if (progress.pagesStaged > 0) {
      log.info({ reportId, pagesStaged: progress.pagesStaged }, 'resuming a staged window');
      // Every page was staged before: nothing is fetched now, and a run counts only what it fetched.
      if (progress.nextPage === null) return { posts: 0, pages: 0 };
      const rest = readPages(this.api, reportId, {
        startToken: progress.nextPage,
        startIndex: progress.pagesStaged,
        signal,
      });
      return await this.stagePages(window, reportId, rest, watchdog, log);
    }
    try {
      const first = await this.waitFor(reportId, watchdog);
      const pages = readPages(this.api, reportId, { first, signal });
      return await this.stagePages(window, reportId, pages, watchdog, log);
    } catch (error) {
      if (!(error instanceof ApiError && error.code === 'REPORT_GONE')) throw error;
      log.info({ reportId }, 'the earlier report is gone; creating another');
      return null;
    }
  }

  private waitFor(reportId: string, watchdog: Watchdog): Promise<ReportPage> {
    watchdog.waitingFor(`report ${reportId} to be DONE`);
    return waitForReport(this.api, reportId, this.context.config.api.poll, {
      signal: watchdog.signal,
      onPoll: () => watchdog.progress(),
    });
  }

  private async stagePages(
    window: Window,
    reportId: string,
    pages: AsyncGenerator<ReportPage>,
    watchdog: Watchdog,
    log: Logger,
  ): Promise<Staged> {
    const postIdField = this.context.config.api.postIdField;
    const keep = fieldFilter(this.context.config.run.fields ?? ALL_FIELDS);
    let posts = 0;
    let count = 0;
    watchdog.waitingFor(`a page of report ${reportId}`);
    // A page is encoded while the one before it is written: on two cores the encoding overlaps the database.
    let writing: Promise<void> | undefined;
    try {
      for await (const page of pages) {
        const mapped = mapRecords(page.records, { postIdField, window, page: page.index, keep });
        // The pager counts pages from 1, as messages do; the stage counts from 0.
        const prepared = await this.loader.preparePage(
          window,
          { index: page.index - 1, nextPage: page.nextPage, posts: mapped },
          watchdog.signal,
        );
        watchdog.waitingFor(`the database to stage page ${page.index} of report ${reportId}`);
        await writing;
        // Only numbers outlive this iteration: the page's records and rows are garbage once encoded, while the
        // write runs (they are most of the live heap).
        const rows = mapped.length;
        const index = page.index;
        const bytes = page.bytes;
        writing = this.loader.writePage(prepared, watchdog.signal).then(() => {
          watchdog.progress();
          posts += rows;
          count += 1;
          this.counters.pages += 1;
          this.context.onProgress?.({ type: 'page-staged', window, posts: rows });
          log.debug({ page: index, posts: rows, bytes }, 'page staged');
        });
        // Awaited on the next page or below; this only keeps a failure from being reported as unhandled meanwhile.
        writing.catch(() => {});
        watchdog.waitingFor(`a page of report ${reportId}`);
      }
      await writing;
    } finally {
      // Never leave a write running behind a failed attempt: the next attempt would race it.
      await writing?.catch(() => {});
    }
    return { posts, pages: count };
  }
}

function retryable(error: unknown): boolean {
  if (error instanceof ConfigError) return false;
  if (error instanceof StoreError && error.code === 'SCHEMA_MISMATCH') return false;
  if (error instanceof EtlError && error.code === 'FIELD_TYPE_MISMATCH') return false;
  if (error instanceof ApiError && (error.status === 400 || error.status === 401 || error.status === 403))
    return false;
  return true;
}
