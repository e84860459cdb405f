import { isDeepStrictEqual } from 'node:util';
import { isLosslessNumber, parse as parseLossless } from 'lossless-json';
import pg from 'pg';
import type { ReferenceValue, SimulatorPost } from '../../src/simulator/reference.js';

/** Exact JSON text → a structure whose numbers are their digits, for comparison without float rounding. */
function exactStructure(text: string): unknown {
  const walk = (value: unknown): unknown => {
    if (isLosslessNumber(value)) return { number: String(value) };
    if (Array.isArray(value)) return value.map(walk);
    if (value !== null && typeof value === 'object') {
      return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, walk(v)]));
    }
    return value;
  };
  return walk(parseLossless(text));
}

function sameNumber(a: string, b: string): boolean {
  // Delivered digits are kept; PostgreSQL may print a numeric the same way, so compare the text first.
  return a === b;
}

/** Compares one database value (as PostgreSQL prints it in JSON) with the reference value. */
function sameValue(db: unknown, ref: ReferenceValue): boolean {
  if (ref === null) return db === null;
  if (typeof ref === 'string' || typeof ref === 'boolean') return db === ref;
  if ('number' in ref) {
    return (
      db !== null && typeof db === 'object' && 'number' in db && sameNumber(String(db.number), ref.number)
    );
  }
  return isDeepStrictEqual(db, exactStructure(ref.json));
}

export interface TableCheck {
  /** Problems found, one line each (empty when the tables equal the reference). */
  readonly problems: string[];
  readonly posts: number;
}

/** A schema's `posts` and `post_custom_segments`, read once, for comparing parts of it with references. */
export interface LoadedTables {
  /** field → column. */
  readonly columns: ReadonlyMap<string, string>;
  /** post id (exact digits) → its window and its row, numbers as exact digits. */
  readonly rows: ReadonlyMap<string, { ws: string; we: string; doc: Record<string, unknown> }>;
  /** post id → `name=value` of each segment. */
  readonly segments: ReadonlyMap<string, string[]>;
  /** Ids loaded more than once. */
  readonly duplicates: readonly string[];
}

/** Reads the tables of a schema (row_to_json prints numerics and bigints with all their digits). */
export async function readTables(
  pool: pg.Pool,
  schema: string,
  postIdField = 'platform_post_id',
  org?: string,
): Promise<LoadedTables> {
  // One organization's rows, or every row of the schema.
  const only = org === undefined ? '' : ` WHERE _org = ${pg.escapeLiteral(org)}`;
  const s = pg.escapeIdentifier(schema);
  const idColumn = pg.escapeIdentifier(postIdField);
  const columns = new Map<string, string>();
  for (const row of (
    await pool.query<{ field: string; column_name: string }>(
      `SELECT field, column_name FROM ${s}.field_columns`,
    )
  ).rows) {
    columns.set(row.field, row.column_name);
  }
  const { rows } = await pool.query<{ id: string; ws: string; we: string; doc: string }>(
    `SELECT ${idColumn}::text AS id, _window_start::text AS ws, _window_end::text AS we, row_to_json(p)::text AS doc
       FROM ${s}.posts p${only}`,
  );
  const loaded = new Map<string, { ws: string; we: string; doc: Record<string, unknown> }>();
  const duplicates: string[] = [];
  for (const row of rows) {
    if (loaded.has(row.id)) duplicates.push(row.id);
    loaded.set(row.id, { ws: row.ws, we: row.we, doc: exactStructure(row.doc) as Record<string, unknown> });
  }
  const segRows = (
    await pool.query<{ id: string; name: string; value: string }>(
      `SELECT ${idColumn}::text AS id, name, value FROM ${s}.post_custom_segments${only} ORDER BY 1, 2, 3`,
    )
  ).rows;
  const segments = new Map<string, string[]>();
  for (const r of segRows) segments.set(r.id, [...(segments.get(r.id) ?? []), `${r.name}=${r.value}`]);
  return { columns, rows: loaded, segments, duplicates };
}

/**
 * Compares the loaded posts whose ids are `scope` with `reference`, row by row and field by field, numbers by
 * their exact digits: every reference post loaded, equal and inside its window; every id of `scope` in the
 * reference. At most about 20 problems are listed.
 */
export function comparePosts(
  tables: LoadedTables,
  reference: readonly SimulatorPost[],
  scope: Iterable<string>,
): string[] {
  const problems: string[] = [];
  const { columns, rows: loaded, segments } = tables;
  const expectedIds = new Set(reference.map((p) => p.id));
  for (const id of scope)
    if (!expectedIds.has(id)) problems.push(`post ${id} is loaded but not in the reference`);
  for (const post of reference) {
    if (problems.length > 20) break;
    const row = loaded.get(post.id);
    if (!row) {
      problems.push(`post ${post.id} (${post.date}) is missing`);
      continue;
    }
    if (post.date < row.ws || post.date > row.we)
      problems.push(`post ${post.id} dated ${post.date} is in window ${row.ws}..${row.we}`);
    // Fields without a column of their own (the column budget) are in _extra_fields, keyed by their names.
    const extra = (row.doc._extra_fields ?? null) as Record<string, unknown> | null;
    for (const [field, value] of Object.entries(post.fields)) {
      const column = columns.get(field);
      const kept = extra !== null && Object.hasOwn(extra, field);
      if (column === undefined && !kept) {
        problems.push(`field ${field} has no column and is not in _extra_fields`);
        continue;
      }
      if (column !== undefined && kept && row.doc[column] != null) {
        problems.push(`post ${post.id} field ${field} is both in its column and in _extra_fields`);
      }
      const got = kept ? extra[field] : row.doc[column!];
      if (!sameValue(got ?? null, value)) {
        problems.push(
          `post ${post.id} field ${field}: loaded ${JSON.stringify(got)}, expected ${JSON.stringify(value)}`,
        );
      }
    }
    for (const field of Object.keys(extra ?? {})) {
      if (!Object.hasOwn(post.fields, field))
        problems.push(`post ${post.id} field ${field} was not sent but is in _extra_fields`);
    }
    // Every column not sent for this post must be NULL (absent, never invented).
    for (const [field, column] of columns) {
      if (!(field in post.fields) && row.doc[column] !== null && row.doc[column] !== undefined) {
        problems.push(
          `post ${post.id} field ${field} was not sent but holds ${JSON.stringify(row.doc[column])}`,
        );
      }
    }
    const want = post.segments.map((x) => `${x.name}=${x.value}`).sort();
    const got = [...(segments.get(post.id) ?? [])].sort();
    if (!isDeepStrictEqual(want, got))
      problems.push(`post ${post.id} segments ${got.join(';')} != ${want.join(';')}`);
  }
  return problems;
}

/**
 * Compares `posts` and `post_custom_segments` of a schema with the simulator's reference posts, row by row and
 * field by field, numbers compared by their exact digits. Every post must lie inside its recorded window. With
 * `org`, that organization's rows only.
 */
export async function compareWithReference(
  pool: pg.Pool,
  schema: string,
  reference: readonly SimulatorPost[],
  postIdField = 'platform_post_id',
  org?: string,
): Promise<TableCheck> {
  const tables = await readTables(pool, schema, postIdField, org);
  const problems = tables.duplicates.map((id) => `post ${id} is loaded twice`);
  problems.push(...comparePosts(tables, reference, tables.rows.keys()));
  return { problems, posts: tables.rows.size };
}

/** The database's whole content in the schema, for "nothing changed" assertions. */
export async function snapshotSchema(pool: pg.Pool, schema: string): Promise<string> {
  const { rows: exists } = await pool.query('SELECT 1 FROM pg_namespace WHERE nspname = $1', [schema]);
  if (exists.length === 0) return '(no schema)';
  const { rows: tables } = await pool.query<{ name: string }>(
    `SELECT c.relname AS name FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
      WHERE n.nspname = $1 AND c.relkind IN ('r', 'p') AND NOT c.relispartition ORDER BY 1`,
    [schema],
  );
  const parts: string[] = [];
  for (const { name } of tables) {
    const { rows } = await pool.query<{ doc: string }>(
      `SELECT row_to_json(t)::text AS doc FROM ${pg.escapeIdentifier(schema)}.${pg.escapeIdentifier(name)} t ORDER BY 1`,
    );
    parts.push(`${name}: ${rows.map((r) => r.doc).join('\n')}`);
  }
  return parts.join('\n\n');
}
