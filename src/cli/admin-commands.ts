import { ApiClient } from '../api/client.js';
import type { Flags } from '../config.js';
import { fetchDimensions } from '../extract/dimensions.js';
import type { FieldSelection } from '../extract/field-selection.js';
import { asStoreError, createPool } from '../load/database.js';
import { migrate } from '../load/migrate.js';
import { sqlState, UNDEFINED_TABLE } from '../load/pg-error-codes.js';
import { checkServer } from '../pipeline/preflight.js';
import { listWindows, readTarget } from '../pipeline/state.js';
import { readSelection } from '../pipeline/target-fields.js';
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
        { schema: config.db.schema, postIdField: config.api.postIdField },
        logger,
        signal,
      );
      io.stdout.write(`${JSON.stringify({ schema: config.db.schema, applied })}\n`);
    } finally {
      await pool.end();
    }
  });
}

/** `status`: windows loaded, failed and in progress, and the cursor. */
export function statusCommand(io: Io, flags: Flags, json: boolean): Promise<number> {
  return guarded(io, async () => {
    const { config, logger } = commandContext(flags, { db: true }, io.signal);
    const pool = createPool(config.db, logger, { max: 1 });
    try {
      const schema = config.db.schema;
      let target: Awaited<ReturnType<typeof readTarget>> = null;
      let windows: Awaited<ReturnType<typeof listWindows>> = [];
      let fields: FieldSelection | null = null;
      try {
        target = await readTarget(pool, schema);
        windows = await listWindows(pool, schema);
        if (target !== null) fields = await readSelection(pool, schema);
      } catch (error) {
        if (sqlState(error) !== UNDEFINED_TABLE) throw error;
      }
      const count = (pred: (w: (typeof windows)[number]) => boolean) => windows.filter(pred).length;
      const report = {
        schema,
        cursor: target?.cursorDate ?? null,
        filters: target?.filters ?? null,
        fields,
        windows: {
          loaded: count((w) => w.rowCount !== null),
          failed: count((w) => w.status === 'failed'),
          inProgress: count((w) => w.status === 'extracting' || w.status === 'staging'),
        },
        posts: windows.reduce((n, w) => n + (w.rowCount ?? 0), 0),
        details: windows,
      };
      if (json) {
        io.stdout.write(`${JSON.stringify(report)}\n`);
        return;
      }
      io.stdout.write(
        `schema ${schema}: ${report.windows.loaded} windows loaded, ${report.windows.failed} failed, ${report.windows.inProgress} in progress; ${report.posts} posts; cursor ${report.cursor ?? '(none)'}\n`,
      );
      for (const w of windows) {
        const rows = w.rowCount === null ? '-' : String(w.rowCount);
        const error = w.lastError ? `  ${w.lastError}` : '';
        io.stdout.write(
          `${w.start}..${w.end}  ${w.status.padEnd(10)} rows ${rows.padStart(8)}  attempts ${w.attempts}${error}\n`,
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
