import pg from 'pg';
import type { RunningSimulator, SimulatorPost } from '../../src/simulator/server.js';
import { compareWithReference } from '../helpers/reference-check.js';

export interface LoadedWindow {
  readonly start: string;
  readonly end: string;
  readonly rowCount: number;
}

async function schemaReady(pool: pg.Pool, schema: string): Promise<boolean> {
  const { rows } = await pool.query<{ ready: boolean }>(
    `SELECT to_regclass($1) IS NOT NULL AND to_regclass($2) IS NOT NULL AS ready`,
    [`${pg.escapeIdentifier(schema)}.report_windows`, `${pg.escapeIdentifier(schema)}.field_columns`],
  );
  return rows[0]?.ready === true;
}

/** The windows whose data the state tables say is in the tables (those with a row count). */
export async function loadedWindows(pool: pg.Pool, schema: string): Promise<LoadedWindow[]> {
  if (!(await schemaReady(pool, schema))) return [];
  const { rows } = await pool.query<{ start: string; end: string; row_count: string }>(
    `SELECT to_char(window_start, 'YYYY-MM-DD') AS start, to_char(window_end, 'YYYY-MM-DD') AS end, row_count::text
       FROM ${pg.escapeIdentifier(schema)}.report_windows WHERE row_count IS NOT NULL ORDER BY 1`,
  );
  return rows.map((r) => ({ start: r.start, end: r.end, rowCount: Number(r.row_count) }));
}

/**
 * Checks a schema after a run that may have been cut short: every window recorded as loaded equals the
 * simulator's reference exactly, no other row exists, each recorded row count is the truth, and every window the
 * run's log said it committed is among them. Returns one line per problem.
 */
export async function verifyLoadedWindows(
  pool: pg.Pool,
  schema: string,
  sim: RunningSimulator,
  committedByLog: ReadonlySet<string>,
): Promise<{ problems: string[]; windows: number; posts: number }> {
  const windows = await loadedWindows(pool, schema);
  const problems: string[] = [];
  const keys = new Set(windows.map((w) => `${w.start}..${w.end}`));
  for (const key of committedByLog) {
    if (!keys.has(key)) problems.push(`window ${key} was logged as committed but is not recorded loaded`);
  }
  if (windows.length === 0) {
    if (await schemaReady(pool, schema)) {
      const { rows } = await pool.query<{ n: string }>(
        `SELECT count(*)::text AS n FROM ${pg.escapeIdentifier(schema)}.posts`,
      );
      if (rows[0]?.n !== '0') problems.push(`no window is loaded but posts holds ${rows[0]?.n} rows`);
    }
    return { problems, windows: 0, posts: 0 };
  }
  const reference: SimulatorPost[] = [];
  for (const w of windows) {
    const posts = sim.referencePosts({ start_date: w.start, end_date: w.end });
    if (posts.length !== w.rowCount) {
      problems.push(
        `window ${w.start}..${w.end} records row_count ${w.rowCount}, the reference has ${posts.length}`,
      );
    }
    reference.push(...posts);
  }
  const check = await compareWithReference(pool, schema, reference);
  problems.push(...check.problems);
  return { problems, windows: windows.length, posts: check.posts };
}
