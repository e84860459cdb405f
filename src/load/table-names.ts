import pg from 'pg';

/** schema.table, both quoted: the one way a table is named in SQL. */
export function qualified(schema: string, table: string): string {
  return `${pg.escapeIdentifier(schema)}.${pg.escapeIdentifier(table)}`;
}

/** The table of a window: a partition of `parent` (posts or post_custom_segments), or a stage (`stage`). */
export function partitionName(parent: string, start: string, end: string): string {
  return `${parent}_${start.replaceAll('-', '')}_${end.replaceAll('-', '')}`;
}
