/*
 * The partitions of posts and post_custom_segments: RANGE on (_org, _window_start), one per organization and
 * period (a year, a month, or all dates), named <table>_y2026, <table>_m202601 or <table>_all, with the
 * organization's key (src/load/organization-keys.ts) after the table's name but for the key `default`
 * (<table>_o3_y2026). The bounds carry the organization's id, as its rows' _org does. A window's rows
 * all carry its start date, so a window lives in exactly one partition. Partitions are made when a window first
 * needs one; those loaded keep their period when the setting changes (a period that would overlap them is not
 * made, and the window goes where its dates already are).
 */

import type pg from 'pg';
import { answeredWith, refusedDefinition } from '../error-policy.js';
import { StoreError } from '../errors.js';
import type { PartitionPeriod } from '../model/partition-period.js';
import { organizationKey } from './organization-keys.js';
import type { StagePeriod } from './queries.js';
import * as queries from './queries.js';
import { orgTableName, type Scope } from './scope.js';
import { columnsOf } from './stage-progress.js';
import { qualified } from './table-names.js';

type Queryable = Pick<pg.ClientBase, 'query'>;

export const PARTITIONED_TABLES = ['posts', 'post_custom_segments'] as const;

/** The primary key of posts' partitions and the columns indexed alone (migration 005). */
export function partitionKeys(postIdField: string): { key: string[]; indexed: string[] } {
  return { key: ['_org', '_window_start', postIdField], indexed: [postIdField] };
}

/** The partition of `parent` for a period (its suffix: periodBounds) of the organization with this key. */
export function periodPartition(key: string, parent: string, suffix: string): string {
  return orgTableName(key, parent, suffix);
}

/** A period's partition: its name's suffix and its dates ([from, to); null: unbounded). */
export interface PeriodBounds {
  readonly suffix: string;
  readonly from: string | null;
  readonly to: string | null;
}

/** The partition of `period` holding a window that starts on `start` (YYYY-MM-DD). */
export function periodBounds(period: PartitionPeriod, start: string): PeriodBounds {
  const year = Number(start.slice(0, 4));
  const month = Number(start.slice(5, 7));
  if (period === 'none') return { suffix: 'all', from: null, to: null };
  if (period === 'year') {
    return { suffix: `y${year}`, from: `${year}-01-01`, to: `${year + 1}-01-01` };
  }
  const next = month === 12 ? { y: year + 1, m: 1 } : { y: year, m: month + 1 };
  return {
    suffix: `m${start.slice(0, 4)}${start.slice(5, 7)}`,
    from: `${start.slice(0, 7)}-01`,
    to: `${String(next.y).padStart(4, '0')}-${String(next.m).padStart(2, '0')}-01`,
  };
}

/**
 * Makes the period's partitions of both tables for a window starting on `start`, unless they exist. Call inside
 * the commit's transaction, which serializes commits: the partition appears with the window's rows, or not at
 * all. Attaching (not CREATE … PARTITION OF) keeps readers of posts going: it takes no lock that blocks them.
 */
export async function ensurePartitions(
  client: Queryable,
  { schema, org }: Scope,
  period: PartitionPeriod,
  start: string,
): Promise<void> {
  const bounds = periodBounds(period, start);
  const key = await organizationKey(client, { schema, org });
  for (const parent of PARTITIONED_TABLES) {
    const name = periodPartition(key, parent, bounds.suffix);
    const found = await client.query<{ exists: boolean }>(queries.tableExists, [qualified(schema, name)]);
    if (found.rows[0]?.exists) continue;
    await client.query(queries.savepoint('partition'));
    try {
      await client.query(queries.createLike(schema, name, parent));
      await client.query(queries.attachRange(schema, parent, name, org, bounds.from, bounds.to));
      await client.query(queries.releaseSavepoint('partition'));
    } catch (error) {
      if (!answeredWith(error, 'overlapping partition')) throw error;
      // Another period's partition holds some of these dates (the setting changed): the rows go there.
      await client.query(queries.rollbackToSavepoint('partition'));
    }
  }
}

/** How many of the two tables have the period's partition for a window starting on `start` (0, 1 or 2). */
export async function partitionsFound(
  client: Queryable,
  scope: Scope,
  period: PartitionPeriod,
  start: string,
): Promise<number> {
  const { suffix } = periodBounds(period, start);
  const key = await organizationKey(client, scope);
  const names = PARTITIONED_TABLES.map((parent) =>
    qualified(scope.schema, periodPartition(key, parent, suffix)),
  );
  const found = await client.query<{ found: number }>(queries.tablesFound, [names]);
  return found.rows[0]?.found ?? 0;
}

/**
 * Makes the period's partitions of both tables for a window starting on `start` with the window's rows in them:
 * each table is created, filled by `fill` (its name) while it has no index, then attached, which builds each of
 * its indexes from the rows in one sort instead of inserting every row into it (about a third of a big window's
 * commit). A CHECK of the period's dates spares the attach its scan of the rows; it is dropped once attached.
 * Call inside the commit's transaction, as ensurePartitions. Returns false, having made nothing, when another
 * period's partition holds some of these dates (the setting changed: ensurePartitions then finds where they go),
 * or when the parents are watched (a trigger, a publication): their rows then go in through the parents.
 */
export async function fillNewPartitions(
  client: Queryable,
  { schema, org }: Scope,
  period: PartitionPeriod,
  start: string,
  fill: (parent: (typeof PARTITIONED_TABLES)[number], table: string) => Promise<void>,
): Promise<boolean> {
  const { suffix, from, to } = periodBounds(period, start);
  if (await watched(client, schema)) return false;
  const key = await organizationKey(client, { schema, org });
  await client.query(queries.savepoint('fill'));
  try {
    // Empty first: dates another period's partition holds fail the attach before any row is written.
    for (const parent of PARTITIONED_TABLES) {
      const name = periodPartition(key, parent, suffix);
      await client.query(queries.createLike(schema, name, parent));
      await client.query(queries.attachRange(schema, parent, name, org, from, to));
    }
    await client.query(queries.rollbackToSavepoint('fill'));
    for (const parent of PARTITIONED_TABLES) {
      const name = periodPartition(key, parent, suffix);
      await client.query(queries.createLike(schema, name, parent));
      await fill(parent, name);
      const check = `${name}_period_check`;
      await client.query(queries.addPeriodCheck(schema, name, check, org, from, to));
      await client.query(queries.attachRange(schema, parent, name, org, from, to));
      await client.query(queries.dropConstraint(schema, name, check));
    }
  } catch (error) {
    if (!answeredWith(error, 'overlapping partition')) throw error;
    await client.query(queries.rollbackToSavepoint('fill'));
    await client.query(queries.releaseSavepoint('fill'));
    return false;
  }
  await client.query(queries.releaseSavepoint('fill'));
  return true;
}

/**
 * The period a window starting on `start` opens, when its stage can become that period's partitions: neither
 * table has the period's partition yet, no other window of the period has a keyed stage open (only one can be
 * attached; a keyed stage costs WAL the others would write again), and the parents are not watched
 * (fillNewPartitions says why). Null otherwise: the window's rows go in through the parents.
 */
export async function periodToOpen(
  client: Queryable,
  scope: Scope,
  period: PartitionPeriod,
  start: string,
): Promise<StagePeriod | null> {
  const { schema, org } = scope;
  if ((await partitionsFound(client, scope, period, start)) > 0) return null;
  if (await watched(client, schema)) return null;
  const { from, to } = periodBounds(period, start);
  const open = await client.query<{ open: boolean }>(queries.keyedStageOpen(schema), [from, to, schema, org]);
  if (open.rows[0]?.open) return null;
  return { org, from, to };
}

async function watched(client: Queryable, schema: string): Promise<boolean> {
  const parents = PARTITIONED_TABLES.map((parent) => qualified(schema, parent));
  const found = await client.query<{ watched: boolean }>(queries.tablesWatched, [parents]);
  return found.rows[0]?.watched === true;
}

/** A window's stage tables, by the parent each would become a partition of. */
export type StageTables = Readonly<Record<(typeof PARTITIONED_TABLES)[number], string>>;

/** The columns each stage fills from its window by default; a partition has none of these defaults. */
const WINDOW_COLUMNS: Readonly<Record<(typeof PARTITIONED_TABLES)[number], readonly string[]>> = {
  posts: ['_window_start', '_org', '_window_end', '_report_id'],
  post_custom_segments: ['_window_start', '_org'],
};

/**
 * Makes a window's keyed stages (createKeyedStagePosts) the period's partitions of both tables, their keys built
 * page by page and their post id indexes here, so that the commit writes no row. Call inside the commit's transaction,
 * once it found no partition of the period. Returns false, having changed nothing, when the stages cannot become
 * partitions as they are: not keyed (a report that repeats a post id), the parents watched since, a column the
 * stage holds with another type than its parent's (a column retyped meanwhile, a type set by hand), or dates
 * another period's partition holds (the setting changed). The rows then go in by fillNewPartitions.
 */
export async function attachStages(
  client: Queryable,
  { schema, org }: Scope,
  period: PartitionPeriod,
  start: string,
  stages: StageTables,
  postIdField: string,
): Promise<boolean> {
  const keyed = await client.query<{ exists: boolean }>(queries.indexExists, [
    qualified(schema, queries.stageKeyIndex(stages.posts)),
  ]);
  if (!keyed.rows[0]?.exists || (await watched(client, schema))) return false;
  const { suffix, from, to } = periodBounds(period, start);
  const key = await organizationKey(client, { schema, org });
  await client.query(queries.savepoint('attach'));
  try {
    for (const parent of PARTITIONED_TABLES) {
      const stage = stages[parent];
      const partition = periodPartition(key, parent, suffix);
      if (!(await alignWithParent(client, schema, stage, parent))) {
        await client.query(queries.rollbackToSavepoint('attach'));
        await client.query(queries.releaseSavepoint('attach'));
        return false;
      }
      await client.query(queries.createStagePostIdIndex(schema, stage, postIdField));
      await client.query(
        queries.stageIntoPartition(schema, stage, partition, WINDOW_COLUMNS[parent], {
          constraint: parent === 'posts',
        }),
      );
      await client.query(queries.attachRange(schema, parent, partition, org, from, to));
      await client.query(queries.dropConstraint(schema, partition, queries.stagePeriodCheck(stage)));
    }
  } catch (error) {
    if (!refusedDefinition(error)) throw error;
    await client.query(queries.rollbackToSavepoint('attach'));
    await client.query(queries.releaseSavepoint('attach'));
    return false;
  }
  await client.query(queries.releaseSavepoint('attach'));
  return true;
}

/**
 * Adds to the stage the parent's columns it lacks (no rows to write: they are NULL); false when a column it has
 * is typed otherwise than the parent's, or missing from it, or when one it lacks has a default (an operator's
 * column: an insert through the parent would fill it) or is NOT NULL.
 */
async function alignWithParent(
  client: Queryable,
  schema: string,
  stage: string,
  parent: string,
): Promise<boolean> {
  const [own, parents] = await Promise.all([stage, parent].map((t) => columnsOf(client, schema, t)));
  for (const [name, type] of own!) {
    if (name !== '_seq' && parents!.get(name) !== type) return false;
  }
  const missing = [...parents!]
    .filter(([name]) => !own!.has(name))
    .map(([column, type]) => ({ column, type }));
  if (missing.length === 0) return true;
  const filled = await client.query<{ name: string }>(queries.columnsWithDefaults, [
    qualified(schema, parent),
  ]);
  if (filled.rows.some((r) => missing.some((m) => m.column === r.name))) return false;
  await client.query(queries.addColumns(schema, stage, missing));
  return true;
}

/** A row routed to no partition: the dates fall between partitions of another period than the setting's. */
export function noPartitionError(start: string, period: PartitionPeriod): StoreError {
  return new StoreError(
    'SCHEMA_MISMATCH',
    `no partition of posts can hold the window starting ${start}: the partitions loaded follow another period than ${JSON.stringify(period)}; set POST_REPORTS_PARTITION_PERIOD to theirs, or start over with --reset`,
  );
}
