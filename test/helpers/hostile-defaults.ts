import pg from 'pg';

/**
 * What a DBA may have made a database's defaults: each one a value the connector's SQL or parsing would read
 * differently from PostgreSQL's own default, were its sessions to take it.
 */
export const HOSTILE_DEFAULTS: readonly (readonly [string, string])[] = [
  ['DateStyle', 'SQL, DMY'],
  ['IntervalStyle', 'sql_standard'],
  // A day away from UTC, east of it.
  ['TimeZone', 'Pacific/Kiritimati'],
  ['default_transaction_isolation', 'serializable'],
  ['extra_float_digits', '-15'],
  ['standard_conforming_strings', 'off'],
  ['bytea_output', 'escape'],
  ['search_path', 'nowhere'],
];

/** Makes HOSTILE_DEFAULTS the defaults of database `name` (its new sessions take them). */
export async function setHostileDefaults(admin: Pick<pg.ClientBase, 'query'>, name: string): Promise<void> {
  for (const [setting, value] of HOSTILE_DEFAULTS) {
    await admin.query(
      `ALTER DATABASE ${pg.escapeIdentifier(name)} SET ${setting} = ${pg.escapeLiteral(value)}`,
    );
  }
}
