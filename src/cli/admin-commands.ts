import { ApiClient } from '../api/client.js';
import type { Flags } from '../config.js';
import { ConfigError } from '../errors.js';
import { fetchDimensions } from '../extract/dimensions.js';
import { asStoreError, createPool } from '../load/database.js';
import { acquireRunLock } from '../load/locks.js';
import { migrate } from '../load/migrate.js';
import { startClock } from '../model/clock.js';
import { todayUtc } from '../model/dates.js';
import { backfillRange } from '../pipeline/backfill.js';
import { planRun } from '../pipeline/plan.js';
import { checkServer } from '../pipeline/preflight.js';
import type { LoadedHistory } from '../pipeline/run-request.js';
import { readSchemaStatus } from '../pipeline/schema-status.js';
import { syncRange } from '../pipeline/sync.js';
import { commandContext } from './context.js';
import { classify, type Io, printError } from './run-output.js';

async function guarded(io: Io, body: () => Promise<void>): Promise<number> {
  try {
    await body();
    return 0;
  } catch (error) {
    printError(io, error);
    return classify(error).exitCode;
  }
}

/** `migrate`: applies pending migrations to the schema. */
export function migrateCommand(io: Io, flags: Flags): Promise<number> {
  return guarded(io, async () => {
    const { config, logger, signal } = commandContext(flags, { db: true }, io.signal);
    // The run lock's connection and the migrator's.
    const pool = createPool(config.db, logger, { max: 2 });
    try {
      await checkServer(pool, config.db.schema).catch((error: unknown) => {
        throw asStoreError('reading the server version and privileges', error);
      });
      const target = {
        schema: config.db.schema,
        postIdField: config.api.postIdField,
        partitionPeriod: config.db.partitionPeriod,
      };
      // Migrations change tables the runs are writing: the schema is taken alone, as a reset takes it.
      const lock = await acquireRunLock(pool, config.db.schema, config.db.lockWaitMs, {
        ...(signal ? { signal } : {}),
        alone: async () => 'migrate',
        onWait: (message) => logger.warn(message),
      });
      try {
        const { applied } = await migrate(pool, target, logger, signal);
        io.stdout.write(`${JSON.stringify({ schema: config.db.schema, applied })}\n`);
      } finally {
        await lock.release();
      }
    } finally {
      await pool.end();
    }
  });
}

/** `status`: every window by standing (in progress only while a live run holds the lock), the cursor, the run. */
export function statusCommand(io: Io, flags: Flags, json: boolean): Promise<number> {
  return guarded(io, async () => {
    const { config, logger } = commandContext(flags, { db: true }, io.signal);
    const pool = createPool(config.db, logger, { max: 1 });
    try {
      const status = await readSchemaStatus(pool, config.db.schema);
      if (json) {
        io.stdout.write(`${JSON.stringify(status)}\n`);
        return;
      }
      const { windows: n, runs } = status;
      const superseded = n.superseded > 0 ? `, ${n.superseded} superseded` : '';
      const backends = runs.map(
        (r) => `${r.pid}${r.since === null ? '' : ` since ${r.since.toISOString()}`}`,
      );
      const running =
        runs.length === 0
          ? 'no run in progress'
          : `${runs.length === 1 ? 'a run' : `${runs.length} runs`} in progress (PostgreSQL backend ${backends.join(', ')})`;
      io.stdout.write(
        `schema ${status.schema}: ${n.loaded} windows loaded, ${n.failed} failed, ${n.inProgress} in progress, ${n.interrupted} interrupted${superseded}; ${status.posts} posts; cursor ${status.cursor ?? '(none)'}; ${running}\n`,
      );
      for (const w of status.details) {
        const rows = w.rowCount === null ? '-' : String(w.rowCount);
        const error = w.lastError ? `  ${w.lastError}` : '';
        const by = w.claimedBy === null ? '' : `  by backend ${w.claimedBy.pid}`;
        io.stdout.write(
          `${w.start}..${w.end}  ${w.standing.padEnd(11)} rows ${rows.padStart(8)}  attempts ${w.attempts}${by}${error}\n`,
        );
      }
    } finally {
      await pool.end();
    }
  });
}

export interface PlanArgs {
  readonly from?: string;
  readonly to?: string;
  readonly reload: boolean;
  readonly sync: boolean;
}

/** `plan`: the windows a backfill (or, with --sync, a sync) would load, one JSON line each; reads only. */
export function planCommand(io: Io, flags: Flags, args: PlanArgs): Promise<number> {
  return guarded(io, async () => {
    const { config, logger } = commandContext(flags, { db: true }, io.signal);
    const dates = [args.from, args.to].filter((d) => d !== undefined).length;
    if (args.sync ? dates > 0 : dates < 2) {
      throw new ConfigError('CONFIG_INVALID', 'plan needs --from and --to (a backfill), or --sync');
    }
    const resolve = args.sync
      ? (history: LoadedHistory) =>
          syncRange(config.run, history, todayUtc(startClock(config.run.clockStart).now()), false)
      : () => backfillRange(args.from ?? '', args.to ?? '', config.run.windowDays, args.reload);
    const pool = createPool(config.db, logger, { max: 1 });
    try {
      for (const window of await planRun(pool, config, resolve))
        io.stdout.write(`${JSON.stringify(window)}\n`);
    } finally {
      await pool.end();
    }
  });
}

/** `dimensions`: the organization's valid filter values, as JSON. */
export function dimensionsCommand(io: Io, flags: Flags): Promise<number> {
  return guarded(io, async () => {
    const { config, logger, signal } = commandContext(flags, { api: true }, io.signal);
    const dimensions = await fetchDimensions(new ApiClient(config.api, logger), signal);
    io.stdout.write(`${JSON.stringify(dimensions, null, 2)}\n`);
  });
}
