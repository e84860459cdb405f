import type pg from 'pg';
import { ApiClient } from '../api/client.js';
import { type Config, type Flags, SETTINGS } from '../config.js';
import { ConfigError } from '../errors.js';
import { fetchDimensions } from '../extract/dimensions.js';
import { connectionError } from '../load/connection-error.js';
import { closePool, createPool } from '../load/database.js';
import {
  acquireRunLock,
  acquireRunLocks,
  type LockHolder,
  organizationLockScope,
  schemaLockScope,
} from '../load/locks.js';
import { migrate, pendingMigrations } from '../load/migrate.js';
import { renameOrganization } from '../load/organization-rename.js';
import { scopeName } from '../load/scope.js';
import { schemaExists } from '../load/window-state.js';
import type { Logger } from '../logger.js';
import { startClock } from '../model/clock.js';
import { todayUtc } from '../model/dates.js';
import { DEFAULT_ORGANIZATION, isOrganizationId, ORGANIZATION_ID_RULE } from '../model/organization.js';
import { backfillRange, cutWarning } from '../pipeline/backfill.js';
import { EXIT } from '../pipeline/exit-codes.js';
import { planRun } from '../pipeline/plan.js';
import { checkServer } from '../pipeline/preflight.js';
import { describeReset, readResetPreview } from '../pipeline/reset-preview.js';
import { runScope } from '../pipeline/run-context.js';
import type { LoadedHistory, RunRange } from '../pipeline/run-request.js';
import {
  readOrganizations,
  readSchemaStatus,
  type SchemaStatus,
  type WindowStatus,
} from '../pipeline/schema-status.js';
import { syncRange } from '../pipeline/sync.js';
import { terminalSafe } from '../secret.js';
import { VERSION } from '../version.js';
import { commandContext } from './context.js';
import { classify, failureSummary, type Io, plural, printError, printSummary } from './run-output.js';

/**
 * Runs a command's body: a failure is one line on stderr, the exit code exitFor gives its cause, and, for a
 * command whose result is a JSON line (`summary` names it), the summary line on stdout too.
 */
export async function guarded(
  io: Io,
  body: (guard: Guard) => Promise<void>,
  summary?: string,
): Promise<number> {
  const started = Date.now();
  const guard: Guard = { scrub: (text) => text };
  try {
    await body(guard);
    return 0;
  } catch (error) {
    printError(io, error, guard.scrub);
    if (summary !== undefined) printSummary(io, failureSummary(summary, error, started), guard.scrub);
    return classify(error).exitCode;
  }
}

/**
 * What a failure is printed with: once the command has read its configuration, its scrubber, so that an error
 * quoting a secret (a driver's message with the connection string, say) prints it as the log would.
 */
export interface Guard {
  scrub: (text: string) => string;
}

/** The command's context, its scrubber handed to the guard that prints its failure. */
export function guardedContext(
  guard: Guard,
  ...args: Parameters<typeof commandContext>
): ReturnType<typeof commandContext> {
  const context = commandContext(...args);
  guard.scrub = context.scrub;
  return context;
}

/** A pool for the command's reads; an error reaching the database reads as in every other command. */
export async function withDatabase<T>(
  config: Config,
  logger: Logger,
  max: number,
  body: (pool: pg.Pool) => Promise<T>,
): Promise<T> {
  const pool = createPool(config.db, logger, { max });
  try {
    return await body(pool);
  } catch (error) {
    throw connectionError(config.db.url.reveal(), error);
  } finally {
    await closePool(pool, logger);
  }
}

/** `migrate`: applies pending migrations to the schema. */
export function migrateCommand(io: Io, flags: Flags, json: boolean): Promise<number> {
  return guarded(
    io,
    async (guard) => {
      const { config, logger, signal } = guardedContext(guard, flags, { db: true }, io.signal);
      // The run lock's connection and the migrator's.
      await withDatabase(config, logger, 2, async (pool) => {
        await checkServer(pool, config.db.schema);
        const target = {
          schema: config.db.schema,
          postIdField: config.api.postIdField,
          partitionPeriod: config.db.partitionPeriod,
        };
        // Migrations change tables the runs are writing: the schema is taken alone.
        const lock = await acquireRunLock(pool, schemaLockScope(config.db.schema), config.db.lockWaitMs, {
          ...(signal ? { signal } : {}),
          alone: async () => 'migrate',
          onWait: (message) => logger.warn(message),
        });
        try {
          const { applied } = await migrate(pool, target, logger, signal);
          if (forPerson(io, json)) {
            io.stdout.write(
              applied.length === 0
                ? `schema ${config.db.schema}: up to date, no migration pending\n`
                : `schema ${config.db.schema}: applied ${applied.join(', ')}\n`,
            );
            return;
          }
          printSummary(io, {
            command: 'migrate',
            version: VERSION,
            status: 'succeeded',
            exitCode: EXIT.ok,
            schema: config.db.schema,
            applied,
          });
        } finally {
          await lock.release();
        }
      });
    },
    forPerson(io, json) ? undefined : 'migrate',
  );
}

/**
 * `rename-organization`: moves an organization's rows and state to another id (a schema loaded before
 * organizations holds everything under `default`), holding both organizations alone (organization-rename.ts).
 */
export function renameOrganizationCommand(
  io: Io,
  flags: Flags,
  args: { readonly from: string; readonly to: string; readonly json: boolean },
): Promise<number> {
  return guarded(
    io,
    async (guard) => {
      for (const [flag, id] of [
        ['--from', args.from],
        ['--to', args.to],
      ] as const) {
        if (!isOrganizationId(id)) {
          throw new ConfigError(
            'CONFIG_INVALID',
            `${flag} must be ${ORGANIZATION_ID_RULE}, got ${JSON.stringify(id)}`,
          );
        }
      }
      const { config, logger, signal } = guardedContext(guard, flags, { db: true }, io.signal);
      const schema = config.db.schema;
      const from = { schema, org: args.from };
      const target = {
        schema,
        postIdField: config.api.postIdField,
        partitionPeriod: config.db.partitionPeriod,
      };
      // The schema's lock, then each organization's alone, in the order of their ids, as every process takes them.
      const orgs = [args.from, args.to].sort();
      await withDatabase(config, logger, 4, async (pool) => {
        await checkServer(pool, schema);
        const locks = await acquireRunLocks(pool, config.db.lockWaitMs, [
          {
            scope: schemaLockScope(schema),
            options: {
              ...(signal ? { signal } : {}),
              alone: async (db) => ((await pendingMigrations(db, target)).length > 0 ? 'migrate' : null),
              onWait: (message) => logger.warn(message),
            },
          },
          ...orgs.map((org) => ({
            scope: organizationLockScope({ schema, org }),
            options: {
              ...(signal ? { signal } : {}),
              alone: async () => 'rename-organization',
              onWait: (message: string) => logger.warn(message),
            },
          })),
        ]);
        try {
          await migrate(pool, target, logger, signal);
          const moved = await renameOrganization(pool, from, args.to, {
            signal,
            waitMs: Math.max(config.db.reconnectWaitMs ?? 0, config.db.lockWaitMs),
          });
          if (forPerson(io, args.json)) {
            io.stdout.write(
              `schema ${schema}: organization ${args.from} is now ${args.to}: ${plural(moved.windows, 'window')}, ${plural(moved.posts, 'post')}, ${plural(moved.partitions, 'partition')}\n`,
            );
            return;
          }
          printSummary(io, {
            command: 'rename-organization',
            version: VERSION,
            status: 'succeeded',
            exitCode: EXIT.ok,
            schema,
            from: args.from,
            to: args.to,
            ...moved,
          });
        } finally {
          await locks.release();
        }
      });
    },
    forPerson(io, args.json) ? undefined : 'rename-organization',
  );
}

/**
 * `status`: every window by standing (in progress only while a live run holds the lock), the cursor, the runs; of
 * the configured organization, or of each organization of the schema (`all`). Text for a person at a terminal,
 * JSON (a line each) for a pipe or with --json. A schema not made yet holds nothing loaded yet; an organization the
 * schema does not hold is refused, naming those it does.
 */
export function statusCommand(io: Io, flags: Flags, json: boolean, all = false): Promise<number> {
  const human = forPerson(io, json);
  return guarded(
    io,
    async (guard) => {
      const { config, logger } = guardedContext(guard, flags, { db: true }, io.signal);
      const scope = runScope(config);
      if (config.organizations !== undefined) {
        if (all) throw bothOrganizationOptions();
        const ids = config.organizations.map((o) => o.id);
        const statuses = await withDatabase(config, logger, 1, async (pool) => {
          const exists = await schemaExists(pool, scope.schema);
          const found: SchemaStatus[] = [];
          for (const org of ids) {
            found.push(
              exists
                ? await readSchemaStatus(pool, { schema: scope.schema, org })
                : nothingLoaded(scope.schema, org),
            );
          }
          return found;
        });
        if (!human) {
          io.stdout.write(`${JSON.stringify(statuses)}\n`);
          return;
        }
        for (const [i, status] of statuses.entries()) {
          if (i > 0) io.stdout.write('\n');
          if (status.windows.total === 0 && status.runs.length === 0) {
            io.stdout.write(`${describeScope(status.schema, status.organization)}: nothing loaded yet\n`);
          } else {
            writeStatus(io, status);
          }
        }
        return;
      }
      const statuses = await withDatabase(config, logger, 1, async (pool) => {
        if (!(await schemaExists(pool, scope.schema))) return null;
        const orgs = await readOrganizations(pool, scope.schema);
        if (!all && orgs.length > 0 && !orgs.includes(scope.org)) {
          throw new ConfigError(
            'CONFIG_INVALID',
            `organization ${JSON.stringify(scope.org)} has nothing in schema ${JSON.stringify(scope.schema)}, which holds ${orgs.join(', ')}: check ${SETTINGS.organization.env} (${SETTINGS.organization.flag})`,
          );
        }
        const found: SchemaStatus[] = [];
        for (const org of all ? orgs : [scope.org]) {
          found.push(await readSchemaStatus(pool, { schema: scope.schema, org }));
        }
        return found;
      });
      if (statuses === null || statuses.length === 0) {
        if (human) {
          io.stdout.write(
            `${describeScope(scope.schema, all ? DEFAULT_ORGANIZATION : scope.org)}: nothing loaded yet${statuses === null ? ' (the schema is made by the first backfill, sync or migrate; check --schema if one was)' : ''}\n`,
          );
        } else {
          io.stdout.write(`${JSON.stringify(nothingLoaded(scope.schema, scope.org))}\n`);
        }
        return;
      }
      for (const status of statuses) {
        if (human) writeStatus(io, status);
        else io.stdout.write(`${JSON.stringify(status)}\n`);
      }
    },
    human ? undefined : 'status',
  );
}

/** --all-organizations and an organizations file name the organizations twice. */
function bothOrganizationOptions(): ConfigError {
  return new ConfigError(
    'CONFIG_INVALID',
    `--all-organizations and ${SETTINGS.organizations.flag} (${SETTINGS.organizations.env}) are both given: give one, every organization of the schema or those of the file`,
  );
}

/** The status of an organization with nothing loaded yet (its schema may not exist). */
function nothingLoaded(schema: string, organization: string): SchemaStatus {
  return {
    schema,
    organization,
    cursor: null,
    filters: null,
    fields: null,
    run: null,
    runs: [],
    windows: { total: 0, loaded: 0, failed: 0, inProgress: 0, interrupted: 0, superseded: 0 },
    windowsWithRows: 0,
    posts: 0,
    details: [],
    stages: [],
    stageBytes: 0,
  };
}

/** `schema s`, or `organization o of schema s` for an organization other than the default. */
function describeScope(schema: string, organization: string): string {
  return organization === DEFAULT_ORGANIZATION
    ? `schema ${schema}`
    : `organization ${organization} of schema ${schema}`;
}

function writeStatus(io: Io, status: SchemaStatus): void {
  // Report ids and last errors come from the API: their control characters are shown, not obeyed.
  const write = (line: string): void => {
    io.stdout.write(`${terminalSafe(line)}\n`);
  };
  const { windows: n, runs } = status;
  const superseded = n.superseded > 0 ? `, ${n.superseded} superseded` : '';
  const open = status.details.filter(isOpen).length;
  const running =
    runs.length === 0
      ? 'no run in progress'
      : `${runs.length === 1 ? 'a run' : `${runs.length} runs`} in progress (${runs.map(describeHolder).join('; ')})`;
  const where = describeScope(status.schema, status.organization);
  write(
    `${where}: ${plural(n.loaded, 'window')} loaded${open > 0 ? ` (${open} open)` : ''}, ${n.failed} failed, ${n.inProgress} in progress, ${n.interrupted} interrupted${superseded}; ${plural(status.posts, 'post')}; cursor ${status.cursor ?? '(none)'}; ${running}`,
  );
  for (const w of status.details) {
    const rows = w.rowCount === null ? '-' : String(w.rowCount);
    const error = w.lastError ? `  ${w.lastError}` : '';
    const by = w.claimedBy === null ? '' : `  by ${describeHolder(w.claimedBy)}`;
    // An open window is loaded with what existed so far: the next run that covers it loads it again.
    const standing = isOpen(w) ? `open (through ${w.loadedThrough})` : w.standing;
    write(
      `${w.start}..${w.end}  ${standing.padEnd(11)} rows ${rows.padStart(8)}  attempts ${w.attempts}${by}${error}`,
    );
  }
  for (const stage of status.stages) {
    const report = stage.reportId === null ? 'no progress row' : `report ${stage.reportId}`;
    write(
      `stage ${stage.start}..${stage.end}  ${(stage.size ?? 'in use').padStart(10)}  ${report}  ${stage.tables.join(', ')}`,
    );
  }
}

/** A loaded window whose dates were not over when it loaded. */
function isOpen(w: WindowStatus): boolean {
  return w.standing === 'loaded' && w.loadedThrough !== null && w.loadedThrough < w.end;
}

/** A live session holding a run's lock or a window's claim, by what a person can act on. */
function describeHolder(holder: LockHolder): string {
  const since = holder.since === null ? '' : ` since ${holder.since.toISOString()}`;
  if (holder.run === null) return `PostgreSQL backend ${holder.pid}${since}`;
  return `run ${holder.run.runId}, pid ${holder.run.pid} on ${holder.run.host}${since}`;
}

export interface PlanArgs {
  readonly from?: string;
  readonly to?: string;
  readonly reload: boolean;
  readonly sync: boolean;
  /** As a --reset run would: what it removes first, then its windows as if nothing were loaded. */
  readonly reset: boolean;
  /** JSON lines even on a terminal. */
  readonly json: boolean;
  /** Each organization of the schema in turn, its windows' lines naming it. */
  readonly allOrganizations?: boolean;
}

/** `plan`: the windows a backfill (or, with --sync, a sync) would load, one JSON line each; reads only. */
export function planCommand(io: Io, flags: Flags, args: PlanArgs): Promise<number> {
  return guarded(io, async (guard) => {
    const { config, logger } = guardedContext(guard, flags, { db: true }, io.signal);
    const dates = [args.from, args.to].filter((d) => d !== undefined).length;
    if (args.sync ? dates > 0 : dates < 2) {
      throw new ConfigError('CONFIG_INVALID', 'plan needs --from and --to (a backfill), or --sync');
    }
    const today = todayUtc(startClock(config.run.clockStart).now());
    // What each organization's run would load, by its own settings (its window length, start date, lookback).
    const resolverOf = (each: Config) => {
      const range = args.sync
        ? undefined
        : backfillRange(args.from ?? '', args.to ?? '', each.run.windowDays, args.reload, today);
      return {
        cut: range === undefined ? undefined : cutWarning(range),
        resolve:
          range === undefined
            ? (history: LoadedHistory) => syncRange(each.run, history, today, args.reset)
            : () => range,
      };
    };
    const { cut, resolve } = resolverOf(config);
    if (cut !== undefined) io.stderr.write(`post-reports-etl: warning: ${cut}\n`);
    const human = forPerson(io, args.json);
    if (config.organizations !== undefined) {
      if (args.allOrganizations === true) throw bothOrganizationOptions();
      const organizations = config.organizations;
      await withDatabase(config, logger, 1, async (pool) => {
        const plans: Record<string, unknown>[] = [];
        for (const [i, organization] of organizations.entries()) {
          if (human && i > 0) io.stdout.write('\n');
          if (!('config' in organization)) {
            const message = organization.problems.join('; ');
            if (human) {
              io.stdout.write(
                `${terminalSafe(`organization ${organization.id} of schema ${config.db.schema}: not planned: ${message}`)}\n`,
              );
            }
            plans.push({
              organization: organization.id,
              error: { code: 'CONFIG_INVALID', message },
            });
            continue;
          }
          const each = organization.config;
          if (human) {
            await planOrganization(
              io,
              pool,
              each,
              resolverOf(each).resolve,
              { ...args, allOrganizations: true },
              true,
            );
            continue;
          }
          const scope = runScope(each);
          const reset = args.reset ? await readResetPreview(pool, scope) : undefined;
          const windows = await planRun(pool, each, resolverOf(each).resolve, { reset: args.reset });
          plans.push({ organization: scope.org, ...(reset === undefined ? {} : { reset }), windows });
        }
        if (!human) io.stdout.write(`${JSON.stringify(plans)}\n`);
      });
      return;
    }
    await withDatabase(config, logger, 1, async (pool) => {
      const orgs = args.allOrganizations
        ? await readOrganizations(pool, config.db.schema)
        : [config.db.organization];
      for (const org of orgs) {
        const each = { ...config, db: { ...config.db, organization: org } };
        await planOrganization(io, pool, each, resolve, args, human);
      }
    });
  });
}

async function planOrganization(
  io: Io,
  pool: pg.Pool,
  config: Config,
  resolve: (history: LoadedHistory) => RunRange,
  args: PlanArgs,
  human: boolean,
): Promise<void> {
  const scope = runScope(config);
  const named = args.allOrganizations === true;
  if (args.reset) {
    const reset = await readResetPreview(pool, scope);
    io.stdout.write(
      human
        ? `${describeReset(scope, reset)}\n`
        : `${JSON.stringify({ reset: { schema: scope.schema, organization: scope.org, ...reset } })}\n`,
    );
  }
  const windows = await planRun(pool, config, resolve, { reset: args.reset });
  if (!human) {
    for (const window of windows)
      io.stdout.write(`${JSON.stringify(named ? { organization: scope.org, ...window } : window)}\n`);
    return;
  }
  const toLoad = windows.filter((w) => w.load).length;
  const of = named ? `${scopeName(scope)}: ` : '';
  io.stdout.write(`${of}${plural(windows.length, 'window')}, ${toLoad} to load:\n`);
  for (const w of windows) {
    const open = w.state === 'loaded' && w.loadedThrough !== null && w.loadedThrough < w.end;
    const state = open ? `open (through ${w.loadedThrough})` : w.state;
    const rows = w.rows === null ? '' : `  rows ${w.rows}`;
    const by = w.claimedBy === null ? '' : `  by ${describeHolder(w.claimedBy)}`;
    const error = w.lastError === null ? '' : `  ${w.lastError}`;
    const replaces =
      w.replaces.length === 0
        ? ''
        : `  replaces ${w.replaces.map((r) => `${r.start}..${r.end} (${plural(r.rows, 'row')})`).join(', ')}`;
    const outside = w.outsideRange ? '  outside the range asked for: the rest of the window it replaces' : '';
    io.stdout.write(
      `${w.start}..${w.end}  ${(w.load ? 'load' : 'skip').padEnd(4)}  ${state.padEnd(11)}${rows}${by}${error}${replaces}${outside}\n`,
    );
  }
}

/** `dimensions`: the organization's valid filter values: a list on a terminal, one JSON line otherwise. */
export function dimensionsCommand(io: Io, flags: Flags, json: boolean): Promise<number> {
  return guarded(io, async (guard) => {
    const { config, logger, signal } = guardedContext(guard, flags, { api: true }, io.signal);
    if (config.organizations !== undefined) {
      throw new ConfigError(
        'CONFIG_INVALID',
        `dimensions reads one organization's API, with its token: unset ${SETTINGS.organizations.env} and give that organization's ${SETTINGS.baseUrl.env} and token`,
      );
    }
    const dimensions = await fetchDimensions(new ApiClient(config.api, logger), signal);
    if (!forPerson(io, json)) {
      io.stdout.write(`${JSON.stringify(dimensions)}\n`);
      return;
    }
    const { customSegments, ...lists } = dimensions;
    for (const [name, values] of Object.entries(lists)) {
      if (Array.isArray(values)) io.stdout.write(`${terminalSafe(`${name}: ${values.join(', ')}`)}\n`);
    }
    for (const segment of customSegments) {
      io.stdout.write(
        `${terminalSafe(`segment ${JSON.stringify(segment.name)}: ${segment.values.join(', ')}`)}\n`,
      );
    }
  });
}

/** Whether stdout goes to a person (a terminal, and no --json asked): a machine reads JSON. */
function forPerson(io: Io, json: boolean): boolean {
  return !json && (io.stdout as Partial<NodeJS.WriteStream>).isTTY === true;
}
