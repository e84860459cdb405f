/**
 * Which fields of a post record are loaded: all of them, only those listed (`--fields`), or all but those listed
 * (`--exclude-fields`). A field left out is dropped as the record is read, so that its values are written
 * nowhere: no column, no stage, no log. The post id is always loaded; `custom_segments` is a field like the
 * others (left out: no segment rows).
 */
export type FieldSelection =
  | { readonly mode: 'all' }
  | { readonly mode: 'include'; readonly fields: readonly string[] }
  | { readonly mode: 'exclude'; readonly fields: readonly string[] };

export const ALL_FIELDS: FieldSelection = Object.freeze({ mode: 'all' });

/** The selection with its names sorted and each once, so that two spellings of one selection compare equal. */
export function canonicalSelection(selection: FieldSelection): FieldSelection {
  if (selection.mode === 'all') return ALL_FIELDS;
  return { mode: selection.mode, fields: [...new Set(selection.fields)].sort() };
}

/** True when both select the same fields. */
export function sameSelection(a: FieldSelection, b: FieldSelection): boolean {
  return JSON.stringify(canonicalSelection(a)) === JSON.stringify(canonicalSelection(b));
}

/** One line for messages: `all fields`, `only a, b`, `all but x`. */
export function describeSelection(selection: FieldSelection): string {
  const canonical = canonicalSelection(selection);
  if (canonical.mode === 'all') return 'all fields';
  const names = canonical.fields.map((f) => JSON.stringify(f)).join(', ');
  return canonical.mode === 'include' ? `only the fields ${names}` : `all fields but ${names}`;
}

/** A test of whether a record's field is loaded; null when every field is (the common case costs nothing). */
export function fieldFilter(selection: FieldSelection): ((field: string) => boolean) | null {
  if (selection.mode === 'all') return null;
  const listed = new Set(selection.fields);
  return selection.mode === 'include' ? (field) => listed.has(field) : (field) => !listed.has(field);
}
