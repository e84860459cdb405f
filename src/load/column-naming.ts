/*
 * API field names are arbitrary text; column names are derived from them by validation, never by trust:
 * - a plain snake_case name (`[a-z][a-z0-9_]*`, at most 63 bytes) is kept as is, so columns mirror the API;
 * - anything else is folded to lower-case letters, digits and '_' (other characters runs become one '_'),
 *   leading/trailing '_' trimmed (connector columns start with '_', fields never do), a leading digit prefixed
 *   with `f_`, an empty result named `field`, and truncated to 63 bytes;
 * - a name already taken (by another field, by the post id column, or by any existing column) gets the first
 *   free suffix `_2`, `_3`, … (the base truncated to keep 63 bytes).
 * The field→column mapping is recorded in the `field_columns` table; columns are still always written through
 * pg.escapeIdentifier.
 */

/** PostgreSQL's identifier limit (NAMEDATALEN - 1), in bytes. */
export const MAX_IDENTIFIER_BYTES = 63;

const PLAIN = /^[a-z][a-z0-9_]*$/;

/** The column a new field would get, before clash resolution. */
export function baseColumnName(field: string): string {
  if (PLAIN.test(field) && field.length <= MAX_IDENTIFIER_BYTES) return field;
  let name = field
    .normalize('NFKD')
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '_')
    .replace(/^_+|_+$/g, '');
  if (name === '') name = 'field';
  else if (/^[0-9]/.test(name)) name = `f_${name}`;
  return name.slice(0, MAX_IDENTIFIER_BYTES).replace(/_+$/, '');
}

/** The column for a new field: its base name, or the first free `_N` variant of it. */
export function chooseColumnName(field: string, taken: ReadonlySet<string>): string {
  const base = baseColumnName(field);
  if (!taken.has(base)) return base;
  for (let n = 2; ; n++) {
    const suffix = `_${n}`;
    const candidate = `${base.slice(0, MAX_IDENTIFIER_BYTES - suffix.length)}${suffix}`;
    if (!taken.has(candidate)) return candidate;
  }
}
