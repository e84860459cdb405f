import { type Config, SETTINGS, type SettingName, type SettingSpec } from '../config.js';
import { ConfigError } from '../errors.js';
import { documentedFields } from '../load/declared-types.js';
import type { StoredFields } from '../load/stored-fields.js';
import {
  ALL_FIELDS,
  canonicalSelection,
  describeSelection,
  type FieldSelection,
  sameSelection,
} from '../model/field-selection.js';

/*
 * The field selection of a target (--fields / --exclude-fields), kept with its filters in sync_state
 * (migration 004). Like the filters, it is part of what a schema holds: a run with another selection is refused
 * unless it starts over (--reset), which also drops the columns of the fields it leaves out. A name is accepted
 * when the documentation names the field, when the API has sent it to this schema before (field_columns), or
 * when the stored selection names it; anything else is taken for a typo and refused before anything is written.
 */

/**
 * The run's selection, checked: every name known (one line naming the unknown ones), the post id never left out,
 * and the same selection the schema was loaded with unless `reset`. Throws ConfigError (exit 2).
 */
export function checkFieldSelection(config: Config, stored: StoredFields, reset: boolean): FieldSelection {
  const selection = canonicalSelection(config.run.fields ?? ALL_FIELDS);
  const schema = config.db.schema;
  if (selection.mode === 'all') {
    checkUnchanged(schema, stored.selection, selection, reset);
    return selection;
  }
  const setting: SettingName = selection.mode === 'include' ? 'fields' : 'excludeFields';
  const postId = config.api.postIdField;
  if (selection.mode === 'exclude' && selection.fields.includes(postId)) {
    throw new ConfigError(
      'CONFIG_INVALID',
      `${where(setting)} names the post id field ${JSON.stringify(postId)}: it is always loaded`,
    );
  }
  const known = new Set([
    ...documentedFields(postId),
    ...stored.reported,
    ...(stored.selection?.mode === 'include' || stored.selection?.mode === 'exclude'
      ? stored.selection.fields
      : []),
  ]);
  const unknown = selection.fields.filter((field) => !known.has(field));
  if (unknown.length > 0) {
    throw new ConfigError(
      'CONFIG_INVALID',
      `${where(setting)} names ${unknown.length === 1 ? 'an unknown field' : 'unknown fields'} ${unknown.map((f) => JSON.stringify(f)).join(', ')}: neither documented nor sent by the API to schema "${schema}" yet (known: ${[...known].sort().join(', ')})`,
    );
  }
  checkUnchanged(schema, stored.selection, selection, reset);
  return selection;
}

function checkUnchanged(
  schema: string,
  stored: FieldSelection | null,
  selection: FieldSelection,
  reset: boolean,
): void {
  if (stored === null || reset || sameSelection(stored, selection)) return;
  throw new ConfigError(
    'FILTERS_CHANGED',
    `schema "${schema}" was loaded with ${describeSelection(stored)}, this run has ${describeSelection(selection)}: pass --reset to clear it, or use another schema`,
  );
}

function where(name: SettingName): string {
  const spec: SettingSpec = SETTINGS[name];
  return spec.flag ? `${spec.env} (${spec.flag})` : spec.env;
}
