import pg from 'pg';

/** schema.table, both quoted: the one way a table is named in SQL. */
export function qualified(schema: string, table: string): string {
  return `${pg.escapeIdentifier(schema)}.${pg.escapeIdentifier(table)}`;
}

/** A window's dates in the name of its tables: `<start>_<end>`, as YYYYMMDD. */
export function windowDates(start: string, end: string): string {
  return `${start.replaceAll('-', '')}_${end.replaceAll('-', '')}`;
}
