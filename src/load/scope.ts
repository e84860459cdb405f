/*
 * Where a run's rows and state are: a schema, and one organization's share of it. Every state table and every
 * lock that is not the schema's as a whole is keyed by both.
 */
import { DEFAULT_ORGANIZATION } from '../model/organization.js';

export interface Scope {
  readonly schema: string;
  /** The organization (`_org` of its rows, `org` of its state rows). */
  readonly org: string;
}

/** The run-state tables, each keyed by `org` first (migration 008). */
export const STATE_TABLES = ['sync_state', 'report_windows', 'window_reports', 'stage_progress'] as const;

/** Every table that holds an organization's rows or state, with the column naming the organization. */
export const ORGANIZATION_TABLES: readonly (readonly [string, '_org' | 'org'])[] = [
  ['posts', '_org'],
  ['post_custom_segments', '_org'],
  ...STATE_TABLES.map((table) => [table, 'org'] as const),
];

/** The scope of a target: its organization, or the default one for a target that names none. */
export function scopeOf(target: { readonly schema: string; readonly org?: string }): Scope {
  return { schema: target.schema, org: target.org ?? DEFAULT_ORGANIZATION };
}

/**
 * A table of an organization's own (a partition, a stage), named from its key (src/load/organization-keys.ts),
 * never its id: the key `default` (the organization of a schema from before organizations) names none.
 */
export function orgTableName(key: string, name: string, rest: string): string {
  return key === DEFAULT_ORGANIZATION ? `${name}_${rest}` : `${name}_${key}_${rest}`;
}

/** How messages name it: the schema, or an organization of it (the default organization's is the schema). */
export function scopeName({ schema, org }: Scope): string {
  return org === DEFAULT_ORGANIZATION ? `schema "${schema}"` : `organization "${org}" of schema "${schema}"`;
}
