/*
 * Widening a column of posts without holding readers out. `ALTER TABLE posts ALTER COLUMN … TYPE numeric`
 * rewrites every window partition while it holds the whole table exclusively: on a long history every query
 * waits for the whole rewrite (npm run bench:widening). Here each partition is copied instead, with the new
 * type, into a table of its own while readers go on reading the old one; then one short exclusive swap drops
 * the old partitions, retypes the (empty) parent and attaches the copies. Only the swap holds readers, and it
 * does catalog work only: its length follows the number of windows, not of rows.
 *
 * It runs inside the caller's transaction, which holds the schema's DDL lock: window commits (which take it
 * too) wait, so no partition is replaced meanwhile, and a SHARE lock on each partition keeps any other writer
 * out while readers go on. A failure or an abort rolls everything back: the copies vanish with the transaction.
 * The copies need as much room again as the table while they are built.
 */
import type pg from 'pg';
import { StoreError } from '../errors.js';
import { isColumnDate } from './field-types.js';
import * as queries from './queries.js';
import { partitionName, qualified } from './table-names.js';

type Queryable = Pick<pg.ClientBase, 'query'>;

/** The column to widen and its new type. */
export interface Retype {
  readonly schema: string;
  /** A table partitioned by LIST (_window_start) into window partitions named <table>_<start>_<end>. */
  readonly table: string;
  readonly column: string;
  /** The new SQL type (from the closed list of the loader's types). */
  readonly type: string;
  /** The key every partition carries (the post id column and _window_start). */
  readonly key: readonly string[];
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
  readonly start: string;
  readonly end: string;
}

/**
 * Changes the type of `column` of a window-partitioned table to `type`, partition by partition: readers wait only
 * for the final swap. Call inside a transaction.
 */
export async function retypeColumn(
  client: Queryable,
  retype: Retype,
  options: RetypeOptions = {},
): Promise<RetypeResult> {
  const { schema, table, column, type, key } = retype;
  const { signal } = options;
  const started = Date.now();
  const partitions = await windowPartitions(client, schema, table);
  const copies: { partition: Partition; copy: string }[] = [];
  for (const [i, partition] of partitions.entries()) {
    signal?.throwIfAborted();
    const copy = partitionName('retype', partition.start, partition.end);
    await client.query(queries.lockShare(schema, partition.name));
    const columns = await columnNames(client, schema, partition.name);
    await client.query(queries.dropTable(schema, copy));
    await client.query(queries.createLike(schema, copy, partition.name));
    await client.query(queries.alterColumnType(schema, copy, column, type));
    await client.query(queries.copyRows(schema, copy, partition.name, columns));
    await client.query(queries.addWindowCheck(schema, copy, partition.start));
    await client.query(queries.addPrimaryKey(schema, copy, key));
    copies.push({ partition, copy });
    await options.onCopied?.(partition.name, i + 1, partitions.length);
  }
  const copied = Date.now();
  signal?.throwIfAborted();
  // Bounded by lock_timeout: a reader that never lets go fails the widening (and the window), it does not hang it.
  await client.query(queries.lockExclusive(schema, table, false));
  // Readers wait from here on: the swap is sent as one batch, so that it costs no round trip per window.
  const swap = [
    ...copies.map(({ partition }) => queries.dropTable(schema, partition.name)),
    queries.alterColumnType(schema, table, column, type),
    ...copies.flatMap(({ partition, copy }) => [
      queries.renameTable(schema, copy, partition.name),
      queries.renameIndex(schema, `${copy}_pkey`, `${partition.name}_pkey`),
      queries.attachPartition(schema, table, partition.name, partition.start),
    ]),
  ];
  await client.query(swap.join(';\n'));
  return { partitions: partitions.length, copyMs: copied - started, swapMs: Date.now() - copied };
}

async function windowPartitions(db: Queryable, schema: string, table: string): Promise<Partition[]> {
  const { rows } = await db.query<{ name: string }>(queries.partitionsOf, [qualified(schema, table)]);
  const pattern = new RegExp(`^${table}_([0-9]{8})_([0-9]{8})$`);
  return rows.map(({ name }) => {
    const m = pattern.exec(name);
    const start = m ? isoDate(m[1]!) : '';
    const end = m ? isoDate(m[2]!) : '';
    if (!isColumnDate(start) || !isColumnDate(end)) {
      throw new StoreError(
        'SCHEMA_MISMATCH',
        `partition ${JSON.stringify(name)} of ${schema}.${table} is not a window partition (${table}_YYYYMMDD_YYYYMMDD): widen the column by hand`,
      );
    }
    return { name, start, end };
  });
}

function isoDate(digits: string): string {
  return `${digits.slice(0, 4)}-${digits.slice(4, 6)}-${digits.slice(6, 8)}`;
}

async function columnNames(db: Queryable, schema: string, table: string): Promise<string[]> {
  const { rows } = await db.query<{ name: string }>(queries.readColumns, [qualified(schema, table)]);
  return rows.map((r) => r.name);
}
