/*
 * Moving an organization's rows and state to another id (`rename-organization`): a schema loaded before
 * organizations holds everything under `default`, and its owner may want it under the organization's real id
 * before another joins. Nothing is asked of the API again.
 *
 * The partitions' bounds carry the id, so the rows move to partitions of the new id, named from a key of its
 * own; the old id's key is retired, never given again. No step holds the parents' locks for long, since other
 * organizations read and commit through the same parents the whole time:
 *  1. one short transaction moves the state, retires the old key, records the rename (which ends any run of the
 *     old id that lost its session: src/load/schema-epoch.ts) and attaches the new id's empty partitions;
 *  2. the rows move a month at a time, each month in a transaction of its own, through the parents: a reader sees
 *     a window under one id or the other, whole, and only row locks of the organization's own rows are held;
 *  3. each emptied partition of the old id is dropped in a transaction of its own that waits for the parent's
 *     lock a moment at most (PARENT_LOCK_WAIT_MS), tried again with backoff while readers are in the way.
 * A rename cut short (a lost session, a stop) is finished by running it again: its record says where it went.
 */
import pg from 'pg';
import { ConfigError, StoreError } from '../errors.js';
import { withTransaction } from './database.js';
import { retryDatabase } from './database-retry.js';
import { ddlLockKey, lockForTransaction, lockParentsForTransaction, PARENT_LOCK_WAIT_MS } from './locks.js';
import { organizationKey } from './organization-keys.js';
import { PARTITIONED_TABLES, periodPartition } from './period-partitions.js';
import * as queries from './queries.js';
import { type Scope, STATE_TABLES, scopeName } from './scope.js';
import { qualified } from './table-names.js';

type Queryable = Pick<pg.ClientBase, 'query'>;

/** What a rename moved. */
export interface RenamedOrganization {
  readonly partitions: number;
  readonly posts: number;
  readonly windows: number;
}

export interface RenameOptions {
  readonly signal?: AbortSignal | undefined;
  /** How long each step goes on retrying a database fault (a lock not free in time, a lost session). */
  readonly waitMs: number;
}

/** A partition of one organization, with the dates of its bounds (null: unbounded). */
interface OrgPartition {
  readonly parent: (typeof PARTITIONED_TABLES)[number];
  readonly name: string;
  readonly from: string | null;
  readonly to: string | null;
}

/**
 * Moves every row of `from` in posts and post_custom_segments, and its state, to `to`. Its stages are dropped (a
 * window in progress is staged again by its next run). Call holding both organizations alone. Throws ConfigError
 * when `to` already holds anything, or `from` nothing (unless a rename from `from` to `to` was cut short).
 */
export async function renameOrganization(
  pool: pg.Pool,
  from: Scope,
  to: string,
  options: RenameOptions,
): Promise<RenamedOrganization> {
  const { schema } = from;
  const target: Scope = { schema, org: to };
  const retry = { waitMs: options.waitMs, signal: options.signal };
  if (from.org === to) {
    throw new ConfigError('CONFIG_INVALID', `--from and --to are both "${to}": nothing to rename`);
  }
  const state = await retryDatabase(
    () => withTransaction(pool, options.signal, (client) => moveState(client, from, target)),
    retry,
  );
  let posts = 0;
  for (const partition of state.partitions.filter((p) => p.parent === 'posts')) {
    for (const [start, end] of await months(pool, schema, partition)) {
      posts += await retryDatabase(
        () => withTransaction(pool, options.signal, (client) => moveRows(client, from, to, start, end)),
        retry,
      );
    }
  }
  // Rows outside the months found (none are expected: a window's rows all carry its start).
  posts += await retryDatabase(
    () => withTransaction(pool, options.signal, (client) => moveRows(client, from, to, null, null)),
    retry,
  );
  for (const partition of state.partitions) {
    await retryDatabase(
      () => withTransaction(pool, options.signal, (client) => dropEmptied(client, schema, partition)),
      retry,
    );
  }
  return { partitions: state.partitions.length, posts, windows: state.windows };
}

/** Step 1: the state, the keys, the record of the rename, and the new id's partitions (see above). */
async function moveState(
  db: Queryable,
  from: Scope,
  target: Scope,
): Promise<{ partitions: OrgPartition[]; windows: number }> {
  const { schema } = from;
  await lockForTransaction(db, ddlLockKey(schema));
  const partitions = await partitionsOf(db, from);
  const resumed =
    partitions.length > 0 && !(await holds(db, from)) && (await renamedTo(db, from)) === target.org;
  if (!resumed) {
    if ((await holds(db, target)) || (await partitionsOf(db, target)).length > 0) {
      throw new ConfigError(
        'CONFIG_INVALID',
        `${scopeName(target)} already holds rows or state: rename to an organization id not in use`,
      );
    }
    if (!(await holds(db, from))) {
      throw new ConfigError('CONFIG_INVALID', `${scopeName(from)} holds nothing to rename`);
    }
    await db.query(
      `INSERT INTO ${qualified(schema, 'organization_renames')} (org, renamed_to) VALUES ($1, $2)`,
      [from.org, target.org],
    );
    await db.query(`UPDATE ${qualified(schema, 'organization_keys')} SET org = NULL WHERE org = $1`, [
      from.org,
    ]);
    const stages = await db.query<{ name: string }>(
      `SELECT stage_posts AS name FROM ${qualified(schema, 'stage_progress')} WHERE org = $1
       UNION SELECT stage_segments FROM ${qualified(schema, 'stage_progress')} WHERE org = $1`,
      [from.org],
    );
    for (const { name } of stages.rows) await db.query(queries.dropTable(schema, name));
    await db.query(`DELETE FROM ${qualified(schema, 'stage_progress')} WHERE org = $1`, [from.org]);
    for (const table of STATE_TABLES) {
      await db.query(`UPDATE ${qualified(schema, table)} SET org = $1 WHERE org = $2`, [
        target.org,
        from.org,
      ]);
    }
    // The columns its pages added count against its share of the column budget under its new name.
    await db.query(`UPDATE ${qualified(schema, 'field_columns')} SET org = $1 WHERE org = $2`, [
      target.org,
      from.org,
    ]);
  }
  const key = await organizationKey(db, target);
  for (const partition of partitions) {
    const name = periodPartition(key, partition.parent, suffixOf(partition));
    const found = await db.query<{ exists: boolean }>(queries.tableExists, [qualified(schema, name)]);
    if (found.rows[0]?.exists) continue;
    // Attaching takes no lock that stops readers or writers of the parent.
    await db.query(queries.createLike(schema, name, partition.parent));
    await db.query(
      queries.attachRange(schema, partition.parent, name, target.org, partition.from, partition.to),
    );
  }
  const windows = await db.query<{ n: number }>(
    `SELECT count(*)::int AS n FROM ${qualified(schema, 'report_windows')} WHERE org = $1 AND row_count IS NOT NULL`,
    [target.org],
  );
  return { partitions, windows: windows.rows[0]?.n ?? 0 };
}

/** The first day of each month some row of the partition starts in, with the next month's: [start, end). */
async function months(db: Queryable, schema: string, partition: OrgPartition): Promise<[string, string][]> {
  const { rows } = await db.query<{ start: string; end: string }>(
    `SELECT to_char(m, 'YYYY-MM-DD') AS start, to_char(m + interval '1 month', 'YYYY-MM-DD') AS end
       FROM generate_series((SELECT date_trunc('month', min(_window_start)) FROM ${qualified(schema, partition.name)}),
                            (SELECT date_trunc('month', max(_window_start)) FROM ${qualified(schema, partition.name)}),
                            interval '1 month') AS m`,
  );
  return rows.map((r) => [r.start, r.end]);
}

/** Step 2: the rows of `from` starting in [start, end) (null: all), both tables together; returns the posts. */
async function moveRows(
  db: Queryable,
  from: Scope,
  to: string,
  start: string | null,
  end: string | null,
): Promise<number> {
  let posts = 0;
  for (const parent of PARTITIONED_TABLES) {
    const moved = await db.query(
      `UPDATE ${qualified(from.schema, parent)} SET _org = $1
        WHERE _org = $2 AND ($3::date IS NULL OR (_window_start >= $3::date AND _window_start < $4::date))`,
      [to, from.org, start, end],
    );
    if (parent === 'posts') posts = moved.rowCount ?? 0;
  }
  return posts;
}

/** Step 3: an emptied partition of the old id, dropped; its parent's lock is waited for PARENT_LOCK_WAIT_MS at most. */
async function dropEmptied(db: Queryable, schema: string, partition: OrgPartition): Promise<void> {
  // The commits' locks first, as a commit takes them: waiting for one, the drop holds nothing of the parents'.
  await lockParentsForTransaction(db, schema);
  await db.query(`SET LOCAL lock_timeout = ${PARENT_LOCK_WAIT_MS}`);
  const left = await db.query<{ found: boolean }>(
    `SELECT EXISTS (SELECT 1 FROM ${qualified(schema, partition.name)}) AS found`,
  );
  if (left.rows[0]?.found) {
    throw new StoreError(
      'DB_ERROR',
      `partition ${partition.name} still holds rows after the rename: not dropped`,
    );
  }
  await db.query(queries.dropTable(schema, partition.name));
}

/**
 * The rename cut short that the organization is part of (renamed away from its id, or to it), or null. Its state
 * moved in the first step, while partitions of the old id still hold rows to move: a run of either id then would
 * write rows the rename's next run moves again, or reload windows whose rows are still under the old id. Such a
 * run must not start before the rename is run again.
 */
export async function unfinishedRename(
  db: Queryable,
  scope: Scope,
): Promise<{ readonly from: string; readonly to: string } | null> {
  const { rows } = await db.query<{ from: string; to: string }>(
    `SELECT org AS "from", renamed_to AS "to" FROM ${qualified(scope.schema, 'organization_renames')}
      WHERE org = $1 OR renamed_to = $1 ORDER BY renamed_at DESC`,
    [scope.org],
  );
  for (const rename of rows) {
    const from: Scope = { schema: scope.schema, org: rename.from };
    if ((await renamedTo(db, from)) !== rename.to || (await holds(db, from))) continue;
    if ((await partitionsOf(db, from)).length > 0) return rename;
  }
  return null;
}

async function holds(db: Queryable, scope: Scope): Promise<boolean> {
  const { rows } = await db.query<{ found: boolean }>(
    `SELECT EXISTS (SELECT 1 FROM ${qualified(scope.schema, 'sync_state')} WHERE org = $1)
         OR EXISTS (SELECT 1 FROM ${qualified(scope.schema, 'report_windows')} WHERE org = $1) AS found`,
    [scope.org],
  );
  return rows[0]?.found === true;
}

/** Where the organization's id was last renamed to, or null. */
async function renamedTo(db: Queryable, scope: Scope): Promise<string | null> {
  const { rows } = await db.query<{ to: string }>(
    `SELECT renamed_to AS "to" FROM ${qualified(scope.schema, 'organization_renames')}
      WHERE org = $1 ORDER BY renamed_at DESC LIMIT 1`,
    [scope.org],
  );
  return rows[0]?.to ?? null;
}

/** The organization's partitions of both tables: those whose bounds are its own. */
async function partitionsOf(db: Queryable, scope: Scope): Promise<OrgPartition[]> {
  const found: OrgPartition[] = [];
  const prefix = `FOR VALUES FROM (${pg.escapeLiteral(scope.org)}, `;
  for (const parent of PARTITIONED_TABLES) {
    const { rows } = await db.query<{ name: string; bound: string }>(queries.partitionsOf, [
      qualified(scope.schema, parent),
    ]);
    for (const r of rows.filter((row) => row.bound.startsWith(prefix))) {
      const dates = /^(?:MINVALUE|'([0-9-]+)')\) TO \('(?:[^']|'')*', (?:MAXVALUE|'([0-9-]+)')\)$/.exec(
        r.bound.slice(prefix.length),
      );
      found.push({ parent, name: r.name, from: dates?.[1] ?? null, to: dates?.[2] ?? null });
    }
  }
  return found;
}

/** The suffix of a partition's name made from its dates, as periodBounds makes them (y2026, m202601, all). */
function suffixOf({ from, to }: OrgPartition): string {
  if (from === null || to === null) return 'all';
  const [y, m] = [from.slice(0, 4), from.slice(5, 7)];
  if (from.endsWith('-01-01') && to === `${Number(y) + 1}-01-01`) return `y${y}`;
  if (from.endsWith('-01')) {
    const next = m === '12' ? `${Number(y) + 1}-01-01` : `${y}-${String(Number(m) + 1).padStart(2, '0')}-01`;
    if (to === next) return `m${y}${m}`;
  }
  return `p${from.replaceAll('-', '')}_${to.replaceAll('-', '')}`;
}
