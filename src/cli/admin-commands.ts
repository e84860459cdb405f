import { ApiClient } from '../api/client.js';
import type { Flags } from '../config.js';
import { fetchDimensions } from '../extract/dimensions.js';
import { asStoreError, createPool } from '../load/database.js';
import { migrate } from '../load/migrate.js';
import { checkServer } from '../pipeline/preflight.js';
import { readSchemaStatus } from '../pipeline/schema-status.js';
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
    const pool = createPool(config.db, logger, { max: 1 });
    try {
      await checkServer(pool, config.db.schema).catch((error: unknown) => {
        throw asStoreError('reading the server version and privileges', error);
      });
      const { applied } = await migrate(
        pool,
        {
          schema: config.db.schema,
          postIdField: config.api.postIdField,
          partitionPeriod: config.db.partitionPeriod,
        },
        logger,
        signal,
      );
      io.stdout.write(`${JSON.stringify({ schema: config.db.schema, applied })}\n`);
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
      const { windows: n, run } = status;
      const superseded = n.superseded > 0 ? `, ${n.superseded} superseded` : '';
      const running =
        run === null
          ? 'no run in progress'
          : `a run in progress (PostgreSQL backend ${run.pid}${run.since === null ? '' : ` since ${run.since.toISOString()}`})`;
      io.stdout.write(
        `schema ${status.schema}: ${n.loaded} windows loaded, ${n.failed} failed, ${n.inProgress} in progress, ${n.interrupted} interrupted${superseded}; ${status.posts} posts; cursor ${status.cursor ?? '(none)'}; ${running}\n`,
      );
      for (const w of status.details) {
        const rows = w.rowCount === null ? '-' : String(w.rowCount);
        const error = w.lastError ? `  ${w.lastError}` : '';
        io.stdout.write(
          `${w.start}..${w.end}  ${w.standing.padEnd(11)} rows ${rows.padStart(8)}  attempts ${w.attempts}${error}\n`,
        );
      }
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
