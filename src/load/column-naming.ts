/*
 * API field names are arbitrary text; column names are derived from them by validation, never by trust:
 * - a plain snake_case name (`[a-z][a-z0-9_]*`, at most 63 bytes, not a PostgreSQL system column) is its own
 *   column's name, whatever came before it: a renamed field never takes a name that a plain field could own first;
 * - anything else is renamed: folded to lower-case letters, digits and '_' (other characters runs become one
 *   '_'), leading/trailing '_' trimmed (connector columns start with '_', fields never do), a leading digit
 *   prefixed with `f_`, an empty result named `field`, and truncated to 63 bytes. A renamed field takes the first
 *   of that name, `_2`, `_3`, … (the base truncated to keep 63 bytes) that no column holds and that no documented
 *   field, no field of the page, no registered field and no system column owns.
 * So with `Total_Spend` in the first post and `total_spend` in later ones, `total_spend` holds `total_spend` and
 * `Total_Spend` gets `total_spend_2`, in whatever order they come. The field→column mapping is recorded in the
 * `field_columns` table (a schema keeps the mapping it has); columns are still always written through
 * pg.escapeIdentifier.
 */

/** PostgreSQL's identifier limit (NAMEDATALEN - 1), in bytes. */
export const MAX_IDENTIFIER_BYTES = 63;

const PLAIN = /^[a-z][a-z0-9_]*$/;

/** Column names PostgreSQL gives every table: a user column cannot have them. */
export const SYSTEM_COLUMNS: ReadonlySet<string> = new Set([
  'xmin',
  'xmax',
  'cmin',
  'cmax',
  'ctid',
  'tableoid',
]);

/** True for a field name that is a column name as it is (its own column's name). */
export function isPlainColumnName(field: string): boolean {
  return PLAIN.test(field) && field.length <= MAX_IDENTIFIER_BYTES && !SYSTEM_COLUMNS.has(field);
}

/** The column a new field would get, before clash resolution. */
export function baseColumnName(field: string): string {
  if (isPlainColumnName(field)) return field;
  let name = field
    .normalize('NFKD')
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '_')
    .replace(/^_+|_+$/g, '');
  if (name === '') name = 'field';
  else if (/^[0-9]/.test(name)) name = `f_${name}`;
  name = name.slice(0, MAX_IDENTIFIER_BYTES).replace(/_+$/, '');
  return SYSTEM_COLUMNS.has(name) ? `${name}_2` : name;
}

/**
 * The column for a new field. A plain name is its own column when no column holds it yet; a renamed field
 * (or a plain one whose name a column of a schema loaded earlier already holds) gets its base name or the first
 * `_N` variant that is neither `taken` (existing columns) nor `reserved` (names plain fields own: documented
 * fields, the fields of the page, registered fields).
 */
export function chooseColumnName(
  field: string,
  taken: ReadonlySet<string>,
  reserved: ReadonlySet<string> = new Set(),
): string {
  const base = baseColumnName(field);
  const free = (name: string) => !taken.has(name) && !SYSTEM_COLUMNS.has(name);
  const plain = base === field;
  if (plain ? free(base) : free(base) && !reserved.has(base)) return base;
  for (let n = 2; ; n++) {
    const suffix = `_${n}`;
    const candidate = `${base.slice(0, MAX_IDENTIFIER_BYTES - suffix.length).replace(/_+$/, '')}${suffix}`;
    if (free(candidate) && !reserved.has(candidate)) return candidate;
  }
}
