import pLimit from 'p-limit';
import type { Config, OrganizationConfig } from '../config.js';
import { retriesRequest } from '../error-policy.js';
import { ConfigError, EtlError, oneLine } from '../errors.js';
import { connectionError } from '../load/connection-error.js';
import { closePool, createPool } from '../load/database.js';
import { acquireRunLock, schemaLockScope } from '../load/locks.js';
import { migrate, pendingMigrations } from '../load/migrate.js';
import type { Logger } from '../logger.js';
import type { Clock } from '../model/clock.js';
import { VERSION } from '../version.js';
import { EXIT, type ExitCode, errorEnd, mostSerious } from './exit-codes.js';
import { checkServer } from './preflight.js';
import type { RunContext } from './run-context.js';
import type { ProgressEvent, RunStatus, RunSummary } from './run-summary.js';

/** One organization's end in a run of several: its own summary, as a run of it alone would print it. */
export type OrganizationSummary = Omit<RunSummary, 'command' | 'version' | 'exitCode'> & {
  readonly organization: string;
  readonly exitCode: ExitCode;
};

/** The end of a run of several organizations: each one's, and the run's as the most serious of them. */
export interface OrganizationsSummary {
  readonly command: 'backfill' | 'sync';
  readonly version: string;
  readonly status: RunStatus;
  /** The most serious of the organizations' exit codes (EXIT_SEVERITY). */
  readonly exitCode: ExitCode;
  readonly durationMs: number;
  /** The organizations' windows and posts added up. */
  readonly windows: RunSummary['windows'];
  readonly posts: number;
  readonly organizations: readonly OrganizationSummary[];
}

export interface OrganizationsOptions {
  /** The run's configuration, with its organizations (parseConfig of an organizations file). */
  readonly config: Config;
  readonly logger: Logger;
  readonly signal?: AbortSignal;
  readonly clock?: Clock;
  /** Each organization's progress, named. */
  readonly onProgress?: (organization: string, event: ProgressEvent) => void;
}

/** One organization's run (a backfill or a sync), given its context. */
export type OrganizationRun = (context: RunContext) => Promise<RunSummary>;

const NO_WINDOWS: RunSummary['windows'] = {
  planned: 0,
  loaded: 0,
  skipped: 0,
  failed: 0,
  interrupted: 0,
  notStarted: 0,
  byOthers: 0,
};

/**
 * Runs every organization of the configuration side by side: each its own run (cursor, reports, state, locks), at
 * most `concurrency` windows in flight across them and each organization's share (its own configuration's
 * concurrency) within that. At most `concurrency` organizations run at once, as each holds connections of its own
 * (its locks, its claims) for as long as it runs. One that cannot start or fails (its settings wrong, its token
 * rejected, its API down) is summed up as such and the others go on; a signal stops them all, each resuming where
 * it was on the next run. One whose start the API kept refusing for a while (429, 5xx, no answer: its requests
 * out of retries) is started once more when the others are done: an API that caps the requests in flight may
 * have been busy with theirs.
 */
export async function runOrganizations(
  options: OrganizationsOptions,
  command: 'backfill' | 'sync',
  run: OrganizationRun,
): Promise<OrganizationsSummary> {
  const { config, logger } = options;
  const started = Date.now();
  const organizations = config.organizations ?? [];
  const budget = config.run.concurrency;
  const windowSlots = pLimit(budget);
  const organizationSlots = pLimit(budget);
  logger.info(
    { organizations: organizations.map((o) => o.id), concurrency: budget },
    `running ${organizations.length} organizations`,
  );
  await migrateFirst(config, logger, options.signal);
  const slots = <T>(task: () => Promise<T>) => windowSlots(task);
  const again = organizations.length > 1;
  const first = await Promise.all(
    organizations.map((organization) =>
      organizationSlots(() => runOne(organization, options, run, slots, again)),
    ),
  );
  const summaries = await Promise.all(
    organizations.map(async (organization, i): Promise<OrganizationSummary> => {
      const summary = first[i];
      if (summary !== START_AGAIN && summary !== undefined) return summary;
      const last = await organizationSlots(() => runOne(organization, options, run, slots, false));
      // Never again: runOne was told not to.
      return last === START_AGAIN ? notRun(organization.id, undefined, started) : last;
    }),
  );
  const exitCode = mostSerious(summaries.map((s) => s.exitCode));
  const worst = summaries.find((s) => s.exitCode === exitCode);
  const windows = { ...NO_WINDOWS };
  for (const summary of summaries) {
    for (const key of Object.keys(windows) as (keyof typeof windows)[]) {
      windows[key] += summary.windows[key];
    }
  }
  const summary: OrganizationsSummary = {
    command,
    version: VERSION,
    status: exitCode === EXIT.ok || worst === undefined ? 'succeeded' : worst.status,
    exitCode,
    durationMs: Date.now() - started,
    windows,
    posts: summaries.reduce((n, s) => n + s.posts, 0),
    organizations: summaries,
  };
  logger.info({ exitCode, status: summary.status }, `${organizations.length} organizations run`);
  return summary;
}

/**
 * Migrates the schema, when a migration is pending, before the organizations start: each run would otherwise take
 * the schema alone for it in turn, the others waiting on its lock. A database that cannot be reached or used fails
 * the run as a whole, as it would each organization.
 */
async function migrateFirst(config: Config, logger: Logger, signal: AbortSignal | undefined): Promise<void> {
  const target = {
    schema: config.db.schema,
    postIdField: config.api.postIdField,
    partitionPeriod: config.db.partitionPeriod,
  };
  // The lock's connection and the migrator's.
  const pool = createPool(config.db, logger, { max: 2 });
  try {
    await checkServer(pool, config.db.schema);
    const lock = await acquireRunLock(pool, schemaLockScope(config.db.schema), config.db.lockWaitMs, {
      ...(signal === undefined ? {} : { signal }),
      alone: async (db) => {
        const pending = await pendingMigrations(db, target);
        return pending.length === 0 ? null : `migration ${pending[0]}`;
      },
      onWait: (message) => logger.warn(message),
    });
    try {
      if ((await pendingMigrations(pool, target)).length > 0) await migrate(pool, target, logger, signal);
    } finally {
      await lock.release();
    }
  } catch (error) {
    throw connectionError(config.db.url.reveal(), error);
  } finally {
    await closePool(pool, logger);
  }
}

/** What runOne returns for an organization to be started once more when the others are done. */
const START_AGAIN = Symbol('start again');

/**
 * One organization's run, summed up. With `again`, one whose start the API kept refusing (see runOrganizations)
 * returns START_AGAIN instead.
 */
async function runOne(
  organization: OrganizationConfig,
  options: OrganizationsOptions,
  run: OrganizationRun,
  windowSlots: <T>(task: () => Promise<T>) => Promise<T>,
  again: boolean,
): Promise<OrganizationSummary | typeof START_AGAIN> {
  const { id } = organization;
  const logger = options.logger.child({ organization: id });
  const started = Date.now();
  const stopped = (): boolean => options.signal?.aborted === true;
  if ('problems' in organization) {
    const error = new ConfigError('CONFIG_INVALID', organization.problems.join('; '));
    logger.error({ code: error.code, reason: error.message }, 'organization not run: its settings are wrong');
    return notRun(id, error, started);
  }
  // Stopped before its turn: nothing of it begun, the next run loads it as this one would have.
  if (stopped()) return notRun(id, options.signal?.reason, started);
  try {
    const summary = await run({
      config: organization.config,
      logger,
      windowSlots,
      ...(options.signal === undefined ? {} : { signal: options.signal }),
      ...(options.clock === undefined ? {} : { clock: options.clock }),
      ...(options.onProgress === undefined
        ? {}
        : { onProgress: (event: ProgressEvent) => options.onProgress?.(id, event) }),
    });
    const { command: _command, version: _version, ...rest } = summary;
    return { organization: id, ...rest, exitCode: summary.exitCode as ExitCode };
  } catch (error) {
    if (again && !stopped() && retriesRequest(error)) {
      logger.warn(
        { code: error instanceof EtlError ? error.code : 'UNEXPECTED', reason: oneLine(String(error)) },
        'organization could not start: started again once the others are done',
      );
      return START_AGAIN;
    }
    const cause = stopped() ? options.signal?.reason : error;
    logger.error(
      {
        code: cause instanceof EtlError ? cause.code : 'UNEXPECTED',
        reason: oneLine(error instanceof Error ? error.message : String(error)),
      },
      'organization could not run',
    );
    return notRun(id, cause, started, error);
  }
}

/** The summary of an organization that did not run: why, and nothing loaded. */
function notRun(id: string, cause: unknown, started: number, error: unknown = cause): OrganizationSummary {
  const end = errorEnd(cause);
  const message = error instanceof Error ? error.message : String(error);
  return {
    organization: id,
    status: end.status,
    exitCode: end.exitCode,
    from: null,
    to: null,
    windows: NO_WINDOWS,
    posts: 0,
    pages: 0,
    retries: 0,
    reportsCreated: 0,
    durationMs: Date.now() - started,
    cursor: null,
    failures: [],
    error: { code: end.code, message: oneLine(message) },
  };
}
