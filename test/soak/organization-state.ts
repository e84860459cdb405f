import { isDeepStrictEqual } from 'node:util';
import pg from 'pg';
import type { FieldSelection } from '../../src/model/field-selection.js';
import type { Window } from '../../src/model/window.js';

/** What an organization's target and windows must record after a run, from the soak's own account. */
export interface ExpectedState {
  readonly grid: readonly Window[];
  /** The filters of its target, as the connector names them (brands, markets, channels...). */
  readonly filters: Readonly<Record<string, readonly string[]>>;
  readonly selection: FieldSelection;
  /** The --reset runs of the organization that completed. */
  readonly resets: number;
}

const windowKey = (start: string, end: string) => `${start}..${end}`;

/**
 * The schema's tables that key rows by organization, from the database's catalog (not the connector's own list):
 * every table that is not a partition and has an `_org` or `org` column, with that column. posts and
 * post_custom_segments (README) must be among them once the schema exists.
 */
async function organizationTables(pool: pg.Pool, schema: string): Promise<(readonly [string, string])[]> {
  const { rows } = await pool.query<{ table: string; column: string }>(
    `SELECT c.relname AS table, a.attname AS column
       FROM pg_class c
       JOIN pg_namespace n ON n.oid = c.relnamespace
       JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped
      WHERE n.nspname = $1 AND c.relkind IN ('r', 'p') AND NOT c.relispartition AND a.attname IN ('_org', 'org')
      ORDER BY 1, 2`,
    [schema],
  );
  const tables = rows.map((r) => [r.table, r.column] as const);
  const names = new Set(tables.map(([table]) => table));
  if (names.size > 0 && !(names.has('posts') && names.has('post_custom_segments'))) {
    throw new Error(
      `soak: the catalog lists no posts or post_custom_segments keyed by organization in ${schema}`,
    );
  }
  return tables;
}

/**
 * Tables keyed by organization whose rows a rename changes beyond the id: the key table (the old id's key retired,
 * a new one given), the record of renames (its rows stay under the id renamed away), and the stages with their
 * progress, which a rename drops (a window in progress is staged again by its next run). RENAME_RECORDS is checked
 * on its own (renameRecords).
 */
const RENAME_RECORDS = 'organization_renames';
const changedByRename = (table: string): boolean =>
  table === 'organization_keys' || table === RENAME_RECORDS || table.startsWith('stage_');

/**
 * Every row and state row of an organization, as text, for "a run of others left it as it was". Columns that are
 * NULL are left out: a field column another organization's run added is NULL in these rows, and changes none of
 * them. With `asRenamed`, without the id itself and the tables a rename changes otherwise (changedByRename): what
 * must read the same under the new id after a rename as under the old one before it.
 */
export async function holdings(
  pool: pg.Pool,
  schema: string,
  org: string,
  options: { asRenamed?: boolean } = {},
): Promise<string> {
  const parts: string[] = [];
  for (const [table, column] of await organizationTables(pool, schema)) {
    if (options.asRenamed === true && changedByRename(table)) continue;
    const row = options.asRenamed === true ? `to_jsonb(t) - ${pg.escapeLiteral(column)}` : 'to_jsonb(t)';
    const { rows } = await pool.query<{ row: string }>(
      `SELECT jsonb_strip_nulls(${row})::text AS row FROM ${pg.escapeIdentifier(schema)}.${pg.escapeIdentifier(table)} t
        WHERE ${pg.escapeIdentifier(column)} = $1 ORDER BY 1`,
      [org],
    );
    // A table with none of its rows reads as one that does not exist yet: another organization's first run
    // creating the schema changes nothing of this one's.
    if (rows.length > 0) parts.push(`${table}:\n${rows.map((r) => r.row).join('\n')}`);
  }
  return parts.join('\n');
}

/** Where two holdings first differ: the table and the lines around it, short. */
export function firstDifference(before: string, after: string): string {
  const a = before.split('\n');
  const b = after.split('\n');
  let table = '';
  for (let i = 0; i < Math.max(a.length, b.length); i += 1) {
    const line = a[i] ?? b[i] ?? '';
    if (/^[a-z_]+:$/.test(line)) table = line.slice(0, -1);
    if (a[i] !== b[i]) {
      const cut = (text: string | undefined) => (text === undefined ? '(none)' : text.slice(0, 300));
      return `in ${table}: before ${cut(a[i])}; after ${cut(b[i])} (${a.length} lines before, ${b.length} after)`;
    }
  }
  return '(none)';
}

/**
 * Rows of the schema, in any of its tables, that name none of the episode's organizations (the record of renames
 * excepted, which keeps the ids renamed away: see renameRecords).
 */
export async function foreignRows(pool: pg.Pool, schema: string, orgs: readonly string[]): Promise<string[]> {
  const problems: string[] = [];
  for (const [table, column] of await organizationTables(pool, schema)) {
    if (table === RENAME_RECORDS) continue;
    const { rows } = await pool.query<{ org: string; n: number }>(
      `SELECT ${pg.escapeIdentifier(column)} AS org, count(*)::int AS n
         FROM ${pg.escapeIdentifier(schema)}.${pg.escapeIdentifier(table)}
        WHERE NOT (${pg.escapeIdentifier(column)} = ANY ($1::text[])) GROUP BY 1 ORDER BY 1`,
      [orgs],
    );
    for (const row of rows) {
      problems.push(`${row.n} rows of ${table} carry the key ${JSON.stringify(row.org)}, no organization's`);
    }
  }
  return problems;
}

/** A stored filter set or selection with its lists sorted, so that two spellings compare equal. */
function sortedLists(value: unknown): unknown {
  if (Array.isArray(value)) return [...value.map(sortedLists)].sort();
  if (value !== null && typeof value === 'object') {
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, sortedLists(v)]));
  }
  return value;
}

interface TargetRow {
  readonly filters: unknown;
  readonly field_selection: unknown;
  readonly cursor_date: string | null;
  readonly reset_count: number;
}

interface WindowRow {
  readonly ws: string;
  readonly we: string;
  readonly report_id: string | null;
  readonly row_count: number | null;
}

/**
 * Checks an organization's run state after a run: its target (filters, field selection, resets, and no cursor: the
 * soak only backfills), and its windows: each on its grid; each window that has a row count holds that many of
 * the organization's posts, all from the report it records; no post of the organization lies in a window whose
 * state does not say loaded.
 */
export async function checkOrganizationState(
  pool: pg.Pool,
  schema: string,
  org: string,
  expected: ExpectedState,
): Promise<string[]> {
  const present = new Set((await organizationTables(pool, schema)).map(([table]) => table));
  if (!present.has('sync_state') || !present.has('report_windows') || !present.has('posts')) return [];
  const s = pg.escapeIdentifier(schema);
  const problems: string[] = [];
  const grid = new Set(expected.grid.map((w) => windowKey(w.start, w.end)));
  const target = (
    await pool.query<TargetRow>(
      `SELECT filters, field_selection, cursor_date::text AS cursor_date, reset_count FROM ${s}.sync_state WHERE org = $1`,
      [org],
    )
  ).rows[0];
  const windows = (
    await pool.query<WindowRow>(
      `SELECT window_start::text AS ws, window_end::text AS we, report_id, row_count::int AS row_count
         FROM ${s}.report_windows WHERE org = $1`,
      [org],
    )
  ).rows;
  const loaded = (
    await pool.query<{ ws: string; we: string; report_id: string; n: number }>(
      `SELECT _window_start::text AS ws, _window_end::text AS we, _report_id AS report_id, count(*)::int AS n
         FROM ${s}.posts WHERE _org = $1 GROUP BY 1, 2, 3`,
      [org],
    )
  ).rows;
  if (target === undefined) {
    if (windows.length > 0 || loaded.length > 0) {
      problems.push(`${org}: ${windows.length} windows and posts in ${loaded.length} windows, but no target`);
    }
    return problems;
  }
  const filters = sortedLists(target.filters);
  if (!isDeepStrictEqual(filters, sortedLists(expected.filters))) {
    problems.push(
      `${org}: the target's filters are ${JSON.stringify(target.filters)}, not ${JSON.stringify(expected.filters)}`,
    );
  }
  const selection = sortedLists(target.field_selection ?? { mode: 'all' });
  if (!isDeepStrictEqual(selection, sortedLists(expected.selection))) {
    problems.push(
      `${org}: the target's field selection is ${JSON.stringify(target.field_selection)}, not ${JSON.stringify(expected.selection)}`,
    );
  }
  if (target.cursor_date !== null)
    problems.push(`${org}: backfills moved the cursor to ${target.cursor_date}`);
  if (target.reset_count !== expected.resets) {
    problems.push(`${org}: the target counts ${target.reset_count} resets, not ${expected.resets}`);
  }
  const byWindow = new Map<string, WindowRow>();
  for (const w of windows) {
    const key = windowKey(w.ws, w.we);
    byWindow.set(key, w);
    if (!grid.has(key)) problems.push(`${org}: report_windows has ${key}, a window off its grid`);
  }
  const rowsByWindow = new Map<string, { n: number; reports: string[] }>();
  for (const row of loaded) {
    const key = windowKey(row.ws, row.we);
    const known = rowsByWindow.get(key) ?? { n: 0, reports: [] };
    rowsByWindow.set(key, { n: known.n + row.n, reports: [...known.reports, row.report_id] });
  }
  for (const [key, rows] of rowsByWindow) {
    const state = byWindow.get(key);
    if (!grid.has(key)) problems.push(`${org}: ${rows.n} posts in ${key}, a window off its grid`);
    if (state?.row_count === null || state?.row_count === undefined) {
      problems.push(`${org}: ${rows.n} posts in ${key}, whose state says it is not loaded`);
      continue;
    }
    if (state.row_count !== rows.n) {
      problems.push(`${org}: window ${key} records ${state.row_count} rows but holds ${rows.n} posts`);
    }
    if (rows.reports.length !== 1 || rows.reports[0] !== state.report_id) {
      problems.push(
        `${org}: the posts of ${key} come from reports ${rows.reports.join(', ')}, its state records ${state.report_id}`,
      );
    }
  }
  for (const [key, state] of byWindow) {
    if (state.row_count !== null && state.row_count > 0 && !rowsByWindow.has(key)) {
      problems.push(`${org}: window ${key} records ${state.row_count} rows but holds none`);
    }
  }
  for (const table of ['window_reports', 'stage_progress'] as const) {
    if (!present.has(table)) continue;
    const { rows } = await pool.query<{ ws: string; we: string }>(
      `SELECT DISTINCT window_start::text AS ws, window_end::text AS we FROM ${s}.${table} WHERE org = $1`,
      [org],
    );
    for (const row of rows) {
      const key = windowKey(row.ws, row.we);
      if (!grid.has(key)) problems.push(`${org}: ${table} has ${key}, a window off its grid`);
    }
  }
  return problems;
}

/**
 * What is wrong with the schema's record of renames: it must hold each rename the episode made (`from -> to`, in
 * their order) and no other.
 */
export async function renameRecords(
  pool: pg.Pool,
  schema: string,
  renames: readonly (readonly [string, string])[],
): Promise<string[]> {
  const { rows } = await pool.query<{ ready: boolean }>('SELECT to_regclass($1) IS NOT NULL AS ready', [
    `${pg.escapeIdentifier(schema)}.${RENAME_RECORDS}`,
  ]);
  if (rows[0]?.ready !== true) {
    return renames.length === 0
      ? []
      : [`${schema} has no ${RENAME_RECORDS}, after ${renames.length} renames`];
  }
  const found = (
    await pool.query<{ line: string }>(
      `SELECT org || ' -> ' || renamed_to AS line FROM ${pg.escapeIdentifier(schema)}.${RENAME_RECORDS}
        ORDER BY renamed_at, org`,
    )
  ).rows.map((r) => r.line);
  const expected = renames.map(([from, to]) => `${from} -> ${to}`);
  return isDeepStrictEqual(found, expected)
    ? []
    : [`${RENAME_RECORDS} holds ${JSON.stringify(found)}, not the renames made ${JSON.stringify(expected)}`];
}
