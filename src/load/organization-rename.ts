/*
 * Moving an organization's rows and state to another id (`rename-organization`): a schema loaded before
 * organizations holds everything under `default`, and its owner may want it under the organization's real id
 * before another joins. Nothing is asked of the API again: each of its partitions is detached, relabelled,
 * renamed and attached under the new id, and its state rows follow, in one transaction.
 */
import type pg from 'pg';
import { ConfigError } from '../errors.js';
import { lockParentsForTransaction } from './locks.js';
import { PARTITIONED_TABLES } from './period-partitions.js';
import * as queries from './queries.js';
import { orgTableName, type Scope, STATE_TABLES, scopeName } from './scope.js';
import { qualified } from './table-names.js';

type Queryable = Pick<pg.ClientBase, 'query'>;

/** What a rename moved. */
export interface RenamedOrganization {
  readonly partitions: number;
  readonly posts: number;
  readonly windows: number;
}

/** A partition of one organization, with the dates of its bounds (null: unbounded). */
interface OrgPartition {
  readonly name: string;
  readonly from: string | null;
  readonly to: string | null;
}

/**
 * Moves every row of `from` in posts and post_custom_segments, and its state, to `to`. Its stages are dropped (a
 * window in progress is staged again by its next run). Run it inside one transaction, holding both organizations
 * alone. Throws ConfigError when `to` already holds anything, or `from` nothing.
 */
export async function renameOrganization(
  db: Queryable,
  from: Scope,
  to: string,
): Promise<RenamedOrganization> {
  const { schema } = from;
  const target: Scope = { schema, org: to };
  if (from.org === to) {
    throw new ConfigError('CONFIG_INVALID', `--from and --to are both "${to}": nothing to rename`);
  }
  if ((await holds(db, target)) || (await partitionsOf(db, target, 'posts')).length > 0) {
    throw new ConfigError(
      'CONFIG_INVALID',
      `${scopeName(target)} already holds rows or state: rename to an organization id not in use`,
    );
  }
  if (!(await holds(db, from))) {
    throw new ConfigError('CONFIG_INVALID', `${scopeName(from)} holds nothing to rename`);
  }
  await lockParentsForTransaction(db, schema);
  const stages = await db.query<{ name: string }>(
    `SELECT stage_posts AS name FROM ${qualified(schema, 'stage_progress')} WHERE org = $1
     UNION SELECT stage_segments FROM ${qualified(schema, 'stage_progress')} WHERE org = $1`,
    [from.org],
  );
  for (const { name } of stages.rows) await db.query(queries.dropTable(schema, name));
  await db.query(`DELETE FROM ${qualified(schema, 'stage_progress')} WHERE org = $1`, [from.org]);
  let partitions = 0;
  let posts = 0;
  for (const parent of PARTITIONED_TABLES) {
    for (const partition of await partitionsOf(db, from, parent)) {
      const suffix = partition.name.slice(orgTableName(from.org, parent, '').length);
      const name = orgTableName(to, parent, suffix);
      await db.query(queries.detachPartition(schema, parent, partition.name));
      const moved = await db.query(
        `UPDATE ${qualified(schema, partition.name)} SET _org = $1 WHERE _org = $2`,
        [to, from.org],
      );
      if (parent === 'posts') posts += moved.rowCount ?? 0;
      await db.query(queries.renameTable(schema, partition.name, name));
      // Its indexes keep the partition's name in theirs, as the connector names a partition's indexes.
      const indexes = await db.query<{ name: string }>(queries.indexesOf, [qualified(schema, name)]);
      for (const index of indexes.rows) {
        if (index.name.startsWith(`${partition.name}_`)) {
          await db.query(
            queries.renameIndex(schema, index.name, `${name}${index.name.slice(partition.name.length)}`),
          );
        }
      }
      const check = `${name}_period_check`;
      await db.query(queries.addPeriodCheck(schema, name, check, to, partition.from, partition.to));
      await db.query(queries.attachRange(schema, parent, name, to, partition.from, partition.to));
      await db.query(queries.dropConstraint(schema, name, check));
      partitions += 1;
    }
  }
  const windows = await db.query<{ n: number }>(
    `SELECT count(*)::int AS n FROM ${qualified(schema, 'report_windows')} WHERE org = $1 AND row_count IS NOT NULL`,
    [from.org],
  );
  for (const table of STATE_TABLES) {
    await db.query(`UPDATE ${qualified(schema, table)} SET org = $1 WHERE org = $2`, [to, from.org]);
  }
  // The columns its pages added count against its share of the column budget under its new name.
  await db.query(`UPDATE ${qualified(schema, 'field_columns')} SET org = $1 WHERE org = $2`, [to, from.org]);
  return { partitions, posts, windows: windows.rows[0]?.n ?? 0 };
}

async function holds(db: Queryable, scope: Scope): Promise<boolean> {
  const { rows } = await db.query<{ found: boolean }>(
    `SELECT EXISTS (SELECT 1 FROM ${qualified(scope.schema, 'sync_state')} WHERE org = $1)
         OR EXISTS (SELECT 1 FROM ${qualified(scope.schema, 'report_windows')} WHERE org = $1) AS found`,
    [scope.org],
  );
  return rows[0]?.found === true;
}

/** The organization's partitions of `parent`: those whose bounds are its own. */
async function partitionsOf(db: Queryable, scope: Scope, parent: string): Promise<OrgPartition[]> {
  const { rows } = await db.query<{ name: string; bound: string }>(queries.partitionsOf, [
    qualified(scope.schema, parent),
  ]);
  const prefix = `FOR VALUES FROM ('${scope.org}', `;
  return rows
    .filter((r) => r.bound.startsWith(prefix))
    .map((r) => {
      const dates =
        /FROM \('[^']*', (?:MINVALUE|'([0-9-]+)')\) TO \('[^']*', (?:MAXVALUE|'([0-9-]+)')\)/.exec(r.bound);
      return { name: r.name, from: dates?.[1] ?? null, to: dates?.[2] ?? null };
    });
}
