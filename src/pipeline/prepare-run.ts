import type pg from 'pg';
import type { Config } from '../config.js';
import { answeredWith } from '../error-policy.js';
import { ConfigError } from '../errors.js';
import { asStoreError, withTransaction } from '../load/database.js';
import { retryDatabase } from '../load/database-retry.js';
import { type DeclaredType, expectedFields } from '../load/declared-types.js';
import { migrate } from '../load/migrate.js';
import { organizationKey } from '../load/organization-keys.js';
import { unfinishedRename } from '../load/organization-rename.js';
import { addDeclaredColumns } from '../load/schema-evolution.js';
import { type Scope, scopeName } from '../load/scope.js';
import { type DroppedStage, dropStagesNotResumed } from '../load/stage-sweep.js';
import { applyFieldSelection, readStoredFields } from '../load/stored-fields.js';
import {
  dropEmptyPartitions,
  firstLoadedDate,
  loadedWindows,
  type ResetCounts,
  readTarget,
  resetTarget,
  type SyncState,
  schemaPostIdField,
  writeTarget,
} from '../load/window-state.js';
import type { Logger } from '../logger.js';
import { startClock } from '../model/clock.js';
import { type FieldSelection, fieldFilter } from '../model/field-selection.js';
import { canonicalFilters, type Filters } from '../model/filters.js';
import { windowLabel } from '../model/window.js';
import { type RunContext, runScope } from './run-context.js';
import type { LoadedHistory, RunRange, RunRequest } from './run-request.js';
import { checkFieldSelection } from './target-fields.js';
import { planWindows, type WindowGroup } from './windows.js';

const NOTHING_LOADED: LoadedHistory = { cursor: null, firstLoaded: null };

/** A run ready to load: its range, its plan and the state it starts from. */
export interface PreparedRun {
  readonly range: RunRange;
  readonly groups: readonly WindowGroup[];
  readonly skipped: number;
  readonly cursor: string | null;
  readonly reset?: ResetCounts;
}

/**
 * Decides the range and the windows to load. The range is decided before anything is written, so that a refused
 * run leaves the database as it was; a reset then clears the schema in one transaction. The columns of the
 * documented fields the selection keeps are made then, before any page arrives.
 */
export async function prepareRun(
  pool: pg.Pool,
  context: RunContext,
  request: RunRequest,
  filters: Filters,
  logger: Logger,
): Promise<PreparedRun> {
  const { config, signal } = context;
  const scope = runScope(config);
  const { stored, postIdField } = await peekTarget(pool, scope);
  const range = request.resolve(request.reset || stored === null ? NOTHING_LOADED : stored.history);
  checkTarget(stored?.target ?? null, postIdField, config, filters, request.reset);
  const fields = checkFieldSelection(
    config,
    await readStoredFields(pool, scope.schema, stored?.target.fieldSelection ?? null),
    request.reset,
  );
  const target = {
    schema: scope.schema,
    postIdField: config.api.postIdField,
    partitionPeriod: config.db.partitionPeriod,
    columnBudget: config.db.columnBudget,
    wideningsPerRun: config.db.wideningsPerRun,
    org: scope.org,
  };
  await migrate(pool, target, logger, signal);
  const renaming = await unfinishedRename(pool, scope);
  if (renaming !== null) {
    throw new ConfigError(
      'CONFIG_INVALID',
      `${scopeName(scope)} is part of a rename cut short, from ${JSON.stringify(renaming.from)} to ${JSON.stringify(renaming.to)}: finish it first (rename-organization --from ${renaming.from} --to ${renaming.to}), then run again`,
    );
  }
  // The key that names the organization's partitions and stages, given once, before anything is made of it.
  await organizationKey(pool, scope);
  let reset: ResetCounts | undefined;
  let cursor: string | null = null;
  if (request.reset) {
    // It empties the organization's partitions (locking them alone, a moment at most, so that others' readers and
    // commits never wait long for it: tried again with backoff, LOCK_NOT_AVAILABLE being a database fault); they are
    // dropped after it where the parents give a moment.
    reset = await retryDatabase(
      () =>
        withTransaction(pool, signal, async (client) => {
          const counts = await resetTarget(client, scope, config.api.postIdField, filters);
          await applyFieldSelection(client, scope, fields, config.api.postIdField);
          return counts;
        }),
      { waitMs: Math.max(config.db.reconnectWaitMs ?? 0, config.db.lockWaitMs), signal },
    );
    logger.warn({ reset }, `starting over (--reset): ${scopeName(scope)} was cleared`);
    const partitions = await dropEmptyPartitions(pool, scope);
    if (partitions.kept > 0) {
      logger.info(
        partitions,
        'partitions emptied by the reset kept: the parents were busy (the next load fills them)',
      );
    }
  } else if (stored === null) {
    await withTransaction(pool, signal, async (client) => {
      await writeTarget(client, scope, config.api.postIdField, filters);
      await applyFieldSelection(client, scope, fields, config.api.postIdField);
    });
  } else {
    cursor = stored.target.cursorDate;
  }
  await addDeclaredColumns(
    pool,
    target,
    logger,
    keptFields(expectedFields(target.postIdField), fields),
    signal,
  );
  if (range.notice !== undefined) logger.warn(range.notice);
  const loaded = await loadedWindows(pool, scope);
  const plan = planWindows(range.windows, loaded, {
    reload: range.reload,
    ...(range.reloadFrom === undefined ? {} : { reloadFrom: range.reloadFrom }),
    today: request.today,
  });
  logger.info({ from: range.from, to: range.to }, 'range resolved');
  await dropStages(pool, context, range, logger);
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

/**
 * Frees, before anything is loaded, the stages no window will resume (stage-sweep.ts): after a disk that filled
 * mid-load, they hold the space the load needs.
 */
async function dropStages(
  pool: pg.Pool,
  context: RunContext,
  range: RunRange,
  logger: Logger,
): Promise<void> {
  const { config, signal } = context;
  const now = (context.clock ?? startClock(config.run.clockStart)).now();
  let dropped: DroppedStage[];
  try {
    dropped = await dropStagesNotResumed(
      pool,
      runScope(config),
      {
        from: range.from,
        to: range.to,
        windows: range.windows,
        receivedSince: new Date(now.getTime() - config.api.reportReuseMs),
      },
      signal,
    );
  } catch (error) {
    throw asStoreError('dropping the stages no window will resume', error);
  }
  if (dropped.length === 0) return;
  logger.info(
    {
      stages: dropped.map((stage) => ({
        window: windowLabel(stage),
        reportId: stage.reportId,
        why: stage.why,
      })),
      bytes: dropped.reduce((n, stage) => n + (stage.bytes ?? 0), 0),
    },
    'stages no window will resume dropped',
  );
}

/** The documented fields the run's selection keeps. */
function keptFields(
  fields: ReadonlyMap<string, DeclaredType>,
  selection: FieldSelection,
): ReadonlyMap<string, DeclaredType> {
  const keep = fieldFilter(selection);
  return keep === null ? fields : new Map([...fields].filter(([field]) => keep(field)));
}

/**
 * The organization's stored target and history (null when it has none yet), and the post id field the schema's
 * tables were made for (null when the schema is not set up yet): every organization shares the column.
 */
async function peekTarget(
  pool: pg.Pool,
  scope: Scope,
): Promise<{ stored: { target: SyncState; history: LoadedHistory } | null; postIdField: string | null }> {
  try {
    const postIdField = await schemaPostIdField(pool, scope.schema);
    const target = await readTarget(pool, scope);
    if (target === null) return { stored: null, postIdField };
    const firstLoaded = await firstLoadedDate(pool, scope);
    return { stored: { target, history: { cursor: target.cursorDate, firstLoaded } }, postIdField };
  } catch (error) {
    if (answeredWith(error, 'no such table')) return { stored: null, postIdField: null };
    throw error;
  }
}

/**
 * Refuses a run whose post id field differs from the one the schema's tables were made for, or whose filters
 * differ from those its organization was loaded with, unless resetting.
 */
function checkTarget(
  stored: SyncState | null,
  postIdField: string | null,
  config: Config,
  filters: Filters,
  reset: boolean,
): void {
  const schema = config.db.schema;
  if (postIdField !== null && postIdField !== config.api.postIdField) {
    throw new ConfigError(
      'FILTERS_CHANGED',
      `schema "${schema}" was loaded with post id field "${postIdField}", not "${config.api.postIdField}": use another schema`,
    );
  }
  if (stored === null) return;
  const before = JSON.stringify(canonicalFilters(stored.filters));
  const now = JSON.stringify(filters);
  if (before !== now && !reset) {
    throw new ConfigError(
      'FILTERS_CHANGED',
      `${scopeName(runScope(config))} was loaded with filters ${before}, this run has ${now}: pass --reset to clear it, or use another schema`,
    );
  }
}
