import type pg from 'pg';
import { qualified } from './table-names.js';
import { schemaPostIdField } from './window-state.js';

/*
 * What a catalog of the schema (dbt's sources.yml) is made from, read from PostgreSQL as loaded: the tables a
 * reader queries, their columns in the catalog's order, and which API field each column of posts holds.
 */

type Queryable = Pick<pg.ClientBase, 'query'>;

/**
 * The tables (and views) readers query, in the order a catalog lists them, each where the schema has it; every
 * other table is the connector's own. The views of each post's latest row are listed once a schema has them.
 */
export const READER_TABLES = [
  'posts',
  'post_custom_segments',
  'posts_latest',
  'post_custom_segments_latest',
  'report_windows',
] as const;
export type ReaderTable = (typeof READER_TABLES)[number];

export interface CatalogColumn {
  readonly name: string;
  /** As information_schema.columns names it (`bigint`, `timestamp with time zone`, …). */
  readonly dataType: string;
}

export interface SourceCatalog {
  /** Each reader table's columns, in their order in the table; a table the schema lacks is absent. */
  readonly tables: ReadonlyMap<ReaderTable, readonly CatalogColumn[]>;
  /** The API field each column of posts holds, by column (field_columns). */
  readonly fieldOfColumn: ReadonlyMap<string, string>;
  /** The post id field the schema's tables were made for; null when no run has recorded one yet. */
  readonly postIdField: string | null;
}

/**
 * Whether `schema` was made by the connector: its migrations' record and its two data tables are there. Reads
 * only; a schema that does not exist is not.
 */
export async function isConnectorSchema(db: Queryable, schema: string): Promise<boolean> {
  const { rows } = await db.query<{ made: boolean }>(
    `SELECT count(*) = 3 AS made FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
      WHERE n.nspname = $1 AND c.relname IN ('schema_migrations', 'posts', 'post_custom_segments')
        AND c.relkind IN ('r', 'p')`,
    [schema],
  );
  return rows[0]?.made === true;
}

/** Reads the catalog of a schema the connector made (isConnectorSchema); reads only. */
export async function readSourceCatalog(db: Queryable, schema: string): Promise<SourceCatalog> {
  const columns = await db.query<{ table_name: ReaderTable; column_name: string; data_type: string }>(
    `SELECT table_name::text, column_name::text, data_type::text FROM information_schema.columns
      WHERE table_schema = $1 AND table_name = ANY($2::text[])
      ORDER BY table_name, ordinal_position`,
    [schema, READER_TABLES],
  );
  const tables = new Map<ReaderTable, CatalogColumn[]>();
  for (const row of columns.rows) {
    const list = tables.get(row.table_name) ?? [];
    list.push({ name: row.column_name, dataType: row.data_type });
    tables.set(row.table_name, list);
  }
  const fields = await db.query<{ field: string; column_name: string }>(
    `SELECT field, column_name FROM ${qualified(schema, 'field_columns')}`,
  );
  return {
    tables,
    fieldOfColumn: new Map(fields.rows.map((r) => [r.column_name, r.field])),
    postIdField: await schemaPostIdField(db, schema),
  };
}
