import pg from 'pg';

/** schema.table, both quoted: the one way a table is named in SQL. */
export function qualified(schema: string, table: string): string {
  return `${pg.escapeIdentifier(schema)}.${pg.escapeIdentifier(table)}`;
}

/** The name of a window's table, `<prefix>_<start>_<end>` (dates as YYYYMMDD): its stage tables. */
export function partitionName(parent: string, start: string, end: string): string {
  return `${parent}_${start.replaceAll('-', '')}_${end.replaceAll('-', '')}`;
}
