import { randomUUID } from 'node:crypto';
import { hostname } from 'node:os';
import type pg from 'pg';
import { ApiClient } from '../api/client.js';
import { sqlState } from '../error-policy.js';
import { oneLine } from '../errors.js';
import { validateFilters } from '../extract/dimensions.js';
import { connectionError } from '../load/connection-error.js';
import { asStoreError, closePool, createPool } from '../load/database.js';
import { Loader } from '../load/loader.js';
import { acquireRunLocks, organizationLockScope, type RunLocks, schemaLockScope } from '../load/locks.js';
import { pendingMigrations, type Target } from '../load/migrate.js';
import { organizationEpoch, schemaEpoch } from '../load/schema-epoch.js';
import type { Scope } from '../load/scope.js';
import { sessionName } from '../load/session-name.js';
import { WindowClaims } from '../load/window-claims.js';
import { WindowCommit } from '../load/window-commit.js';
import { advanceCursorTo, readCursor } from '../load/window-state.js';
import { startClock } from '../model/clock.js';
import { dayBefore } from '../model/dates.js';
import { canonicalFilters } from '../model/filters.js';
import { VERSION } from '../version.js';
import { exitFor } from './exit-codes.js';
import { preflight } from './preflight.js';
import { type PreparedRun, prepareRun } from './prepare-run.js';
import type { WindowSlots } from './run-context.js';
import { type ActiveRun, type RunContext, runScope } from './run-context.js';
import { RunCounters } from './run-counters.js';
import { type LoadOutcome, loadGroups } from './run-groups.js';
import type { RunRequest } from './run-request.js';
import { RunStop } from './run-stop.js';
import type { RunStatus, RunSummary, WindowFailure } from './run-summary.js';
import { WindowStager } from './window-stager.js';

/**
 * Runs the windows of a request: creates (or resumes) a report per window, streams its pages into the stage, and
 * commits each group of windows atomically. Failing windows are retried, then reported; they never stop the others.
 */
export async function executeRun(context: RunContext, request: RunRequest): Promise<RunSummary> {
  const { config } = context;
  // Everything of the run listens to the stop's signal: SIGINT/SIGTERM, or a token the API rejects.
  const stop = new RunStop(context.signal);
  const started = Date.now();
  const runId = randomUUID();
  const clock = context.clock ?? startClock(config.run.clockStart);
  // A report asked for from now on is made no earlier than this: windows loaded from one as new are done.
  const madeSince = new Date(clock.now().getTime() - config.api.reportReuseMs);
  const logger = context.logger.child({ runId, command: request.command });
  const counters = new RunCounters();
  const api = new ApiClient(config.api, logger, { onRetry: () => counters.retried() });
  logger.info({ version: VERSION }, 'run started');
  const pool = createPool(config.db, logger, {
    // The windows' connections, the run locks' (the schema's and the organization's), the window claims', and one
    // for the run's own reads.
    max: config.run.concurrency + 4,
    applicationName: sessionName(runId, process.pid, hostname()),
  });
  try {
    const filters = canonicalFilters(config.run.filters);
    const dimensions = await preflight(api, pool, config.db.schema, stop.signal).catch((error: unknown) => {
      throw connectionError(config.db.url.reveal(), error);
    });
    validateFilters(filters, dimensions);
    const target = {
      schema: config.db.schema,
      postIdField: config.api.postIdField,
      partitionPeriod: config.db.partitionPeriod,
      columnBudget: config.db.columnBudget,
      wideningsPerRun: config.db.wideningsPerRun,
      org: config.db.organization,
    };
    const scope = runScope(config);
    // The schema's lock, then the organization's: those who need either alone (a migration, a reset) wait for
    // the runs that share it, and runs of other organizations never wait for a reset.
    const lockOptions = (name: string, epoch: (db: Queryable) => Promise<string>) => ({
      signal: stop.signal,
      onWait: (message: string) => logger.warn(message),
      regain: {
        waitMs: config.db.reconnectWaitMs ?? 0,
        epoch,
        onLost: (error: Error) => {
          logger.warn(
            { code: sqlState(error), reason: oneLine(error.message) },
            `the ${name} lock session was lost: no commit until the lock is taken again`,
          );
          // Nothing held it alone meanwhile, or the run stops: its windows in flight are interrupted. (Lost while
          // the run still takes its other lock, it is awaited before the first commit all the same.)
          locks?.held().catch((lost: unknown) => stop.fail(asStoreError(`the ${name} lock`, lost)));
        },
        onRegained: () => logger.info(`the ${name} lock was taken again; nothing held it alone meanwhile`),
      },
    });
    let locks: RunLocks | undefined;
    const lock = await acquireRunLocks(pool, config.db.lockWaitMs, [
      {
        scope: schemaLockScope(config.db.schema),
        options: {
          ...lockOptions('run', (db) => schemaEpoch(db, config.db.schema)),
          alone: (db) => migrationAlone(db, target),
        },
      },
      {
        scope: organizationLockScope(scope),
        options: {
          ...lockOptions('organization', (db) => organizationEpoch(db, scope)),
          alone: async () => (request.reset ? '--reset' : null),
        },
      },
    ]).catch((error: unknown) => {
      throw connectionError(config.db.url.reveal(), error);
    });
    locks = lock;
    try {
      const loader = new Loader(pool, target, logger);
      const run: ActiveRun = {
        config,
        logger,
        stop,
        api,
        loader,
        pool,
        filters,
        counters,
        clock,
        ...(context.onProgress === undefined ? {} : { onProgress: context.onProgress }),
      };
      const summary = await loadRun(run, request, started, lock, madeSince, context.windowSlots);
      // Once a run: what went the slow way is the first thing to look at when a load is slower than it should be.
      logger.info(
        {
          pages: counters.pagesRead,
          pagesTheFullWay: counters.pagesTheFullWay,
          values: counters.valuesRead,
          valuesTheFullWay: counters.valuesTheFullWay,
        },
        'pages read in one pass, and those read the full way (exact JSON, lossless-json)',
      );
      logger.info({ summary }, 'run finished');
      return summary;
    } finally {
      await lock.release();
    }
  } finally {
    await closePool(pool, logger);
  }
}

type Queryable = Pick<pg.ClientBase, 'query'>;

/** Why a run needs its schema alone before it starts (pending migrations), or null: it shares it. */
async function migrationAlone(db: Queryable, target: Target): Promise<string | null> {
  const pending = await pendingMigrations(db, target);
  return pending.length === 0 ? null : `migration ${pending[0]}`;
}

/**
 * Under the run lock: decides the windows (alone when resetting or migrating, then sharing the schema), loads
 * them, moves the cursor, and sums the run up.
 */
async function loadRun(
  run: ActiveRun,
  request: RunRequest,
  started: number,
  lock: RunLocks,
  madeSince: Date,
  shared: WindowSlots | undefined,
): Promise<RunSummary> {
  const { config, pool, stop, logger } = run;
  const signal = stop.signal;
  const context = { config, logger, signal, ...(run.onProgress ? { onProgress: run.onProgress } : {}) };
  const prepared = await prepareRun(pool, context, request, run.filters, logger);
  const { range } = prepared;
  const claims = new WindowClaims(
    pool,
    runScope(config),
    logger,
    {
      madeSince,
      reloads: (w) => range.reload || (range.reloadFrom !== undefined && w.end >= range.reloadFrom),
    },
    config.db.reconnectWaitMs ?? 0,
  );
  try {
    // The schema is ready: the processes waiting for it go on while this one opens its claims' connection.
    await lock.share();
    await claims.start();
    const outcome = await loadGroups(new WindowStager(run), prepared.groups, {
      concurrency: config.run.concurrency,
      ...(shared === undefined ? {} : { shared }),
      signal,
      claims,
      commits: new WindowCommit({
        pool,
        scope: runScope(config),
        loader: run.loader,
        locks: lock,
        claims,
        logger,
        waitMs: config.db.reconnectWaitMs ?? 0,
        today: request.today,
      }),
    });
    const cursor =
      request.moveCursor && !signal.aborted
        ? await advanceCursor(pool, runScope(config), prepared, outcome.failures, claims)
        : prepared.cursor;
    if (stop.cause !== undefined) {
      logger.error({ code: stop.cause.code, reason: oneLine(stop.cause.message) }, 'run stopped');
    }
    return summarize(request, prepared, outcome, run.counters, cursor, started, stop);
  } finally {
    await claims.close();
  }
}

/**
 * The cursor never passes a date that did not load, nor a window another process still holds: it stops the day
 * before the first of them. It only moves forward, as several syncs may end in any order: a reload that failed
 * behind it is tried again by the next sync's lookback. Returns the cursor now stored.
 */
async function advanceCursor(
  pool: pg.Pool,
  scope: Scope,
  run: PreparedRun,
  failures: readonly WindowFailure[],
  claims: WindowClaims,
): Promise<string | null> {
  const { range, cursor } = run;
  const held = await claims.heldByOthers(range.windows);
  const firstGap = [...failures, ...held].map((w) => w.start).sort()[0];
  const reached = firstGap !== undefined ? dayBefore(firstGap) : range.to;
  if (cursor === null && reached < range.from) return readCursor(pool, scope);
  return advanceCursorTo(pool, scope, reached);
}

function summarize(
  request: RunRequest,
  run: PreparedRun,
  outcome: LoadOutcome,
  counters: RunCounters,
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
      notStarted: outcome.notStarted,
      byOthers: outcome.byOthers,
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
