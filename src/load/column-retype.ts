/*
 * Widening a column of posts without holding readers out. `ALTER TABLE posts ALTER COLUMN … TYPE numeric`
 * rewrites every partition while it holds the whole table exclusively: on a long history every query
 * waits for the whole rewrite (npm run bench:widening). Here each partition is copied instead, with the new
 * type, into a table of its own while readers go on reading the old one; then one short exclusive swap drops
 * the old partitions, retypes the (empty) parent and attaches the copies. Only the swap holds readers, and it
 * does catalog work only: its length follows the number of partitions, not of rows.
 *
 * It runs inside the caller's transaction, which holds the schema's DDL lock: window commits (which take it
 * too) wait, so no partition is replaced meanwhile, and a SHARE lock on each partition keeps any other writer
 * out while readers go on. A failure or an abort rolls everything back: the copies vanish with the transaction.
 * The copies need as much room again as the table while they are built.
 */
import type pg from 'pg';
import { dropLatestForChange, remakeLatestViews } from './latest-views.js';
import * as queries from './queries.js';
import { qualified } from './table-names.js';

type Queryable = Pick<pg.ClientBase, 'query'>;

/** The column to widen and its new type. */
export interface Retype {
  readonly schema: string;
  /** A partitioned table (posts). */
  readonly table: string;
  readonly column: string;
  /** The new SQL type (from the closed list of the loader's types). */
  readonly type: string;
  /** The primary key every partition carries. */
  readonly key: readonly string[];
  /** Columns with an index of their own on every partition. */
  readonly indexed: readonly string[];
  /** The post id column: posts_latest, which holds posts' columns, is made again with it after the swap. */
  readonly postIdField: string;
}

export interface RetypeOptions {
  readonly signal?: AbortSignal;
  /** Called after each partition is copied, before the swap. */
  readonly onCopied?: (partition: string, done: number, total: number) => Promise<void> | void;
}

export interface RetypeResult {
  readonly partitions: number;
  /** Time spent copying (readers not held) and swapping (readers held). */
  readonly copyMs: number;
  readonly swapMs: number;
}

interface Partition {
  readonly name: string;
  /** `FOR VALUES …`, as the catalog writes it. */
  readonly bound: string;
  readonly constraint_def: string;
}

/**
 * Changes the type of `column` of a partitioned table to `type`, partition by partition: readers wait only for the
 * final swap. Call inside a transaction.
 */
export async function retypeColumn(
  client: Queryable,
  retype: Retype,
  options: RetypeOptions = {},
): Promise<RetypeResult> {
  const { schema, table, column, type, key, indexed, postIdField } = retype;
  const { signal } = options;
  const started = Date.now();
  const { rows: partitions } = await client.query<Partition>(queries.partitionsOf, [
    qualified(schema, table),
  ]);
  const copies: { partition: Partition; copy: string }[] = [];
  for (const [i, partition] of partitions.entries()) {
    signal?.throwIfAborted();
    const copy = `retype_${i}_${table}`;
    await client.query(queries.lockShare(schema, partition.name));
    const columns = await columnNames(client, schema, partition.name);
    await client.query(queries.dropTable(schema, copy));
    await client.query(queries.createLike(schema, copy, partition.name));
    await client.query(queries.alterColumnType(schema, copy, column, type));
    await client.query(queries.copyRows(schema, copy, partition.name, columns));
    await client.query(queries.addPartitionCheck(schema, copy, partition.constraint_def));
    // Built here, the indexes are adopted by the attach instead of being built while readers wait.
    await client.query(queries.addPrimaryKey(schema, copy, key));
    for (const name of indexed) await client.query(queries.createIndex(schema, copy, name));
    copies.push({ partition, copy });
    await options.onCopied?.(partition.name, i + 1, partitions.length);
  }
  const copied = Date.now();
  signal?.throwIfAborted();
  // Bounded by lock_timeout: a reader that never lets go fails the widening (and the window), it does not hang it.
  await client.query(queries.lockExclusive(schema, table));
  // Readers wait from here on: the swap is sent as one batch, so that it costs no round trip per partition.
  // posts_latest holds the column: it is dropped first and made again last, within the swap's transaction.
  const views = table === 'posts';
  if (views) await dropLatestForChange(client, schema);
  const swap = [
    ...copies.map(({ partition }) => queries.dropTable(schema, partition.name)),
    queries.alterColumnType(schema, table, column, type),
    ...copies.flatMap(({ partition, copy }) => [
      queries.renameTable(schema, copy, partition.name),
      queries.renameIndex(schema, `${copy}_pkey`, `${partition.name}_pkey`),
      ...indexed.map((name) =>
        queries.renameIndex(schema, queries.indexName(copy, name), queries.indexName(partition.name, name)),
      ),
      queries.attachWithBound(schema, table, partition.name, partition.bound),
    ]),
  ];
  await client.query(swap.join(';\n'));
  if (views) await remakeLatestViews(client, schema, postIdField);
  return { partitions: partitions.length, copyMs: copied - started, swapMs: Date.now() - copied };
}

async function columnNames(db: Queryable, schema: string, table: string): Promise<string[]> {
  const { rows } = await db.query<{ name: string }>(queries.readColumns, [qualified(schema, table)]);
  return rows.map((r) => r.name);
}
