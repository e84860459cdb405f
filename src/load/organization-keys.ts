/*
 * The short key each organization of a schema is given (migration 011), from which the names of its partitions
 * and stages are made: ids are up to 64 characters of letters, digits, `-`, `_` and `.`, which no table name could
 * carry whole. Keys are o1, o2, … from a sequence, never given twice; the default organization's is `default`,
 * which names none (posts_y2026), unless that key was taken away by a rename. A key never changes while its
 * organization holds it, so whoever holds the organization's lock may read it once and keep it.
 */
import type pg from 'pg';
import { answeredWith } from '../error-policy.js';
import { StoreError } from '../errors.js';
import { DEFAULT_ORGANIZATION } from '../model/organization.js';
import type { Scope } from './scope.js';
import { qualified } from './table-names.js';

type Queryable = Pick<pg.ClientBase, 'query'>;

/**
 * The key of the organization, given to it now when it has none. Two organizations asking at once each get
 * their own (the sequence); the same one asking twice at once gets one key (the unique id): the loser's insert
 * finds the winner's row on its next reading.
 */
export async function organizationKey(db: Queryable, scope: Scope): Promise<string> {
  const keys = qualified(scope.schema, 'organization_keys');
  const sequence = qualified(scope.schema, 'organization_key_seq');
  for (let attempt = 0; attempt < 3; attempt += 1) {
    const { rows } = await db.query<{ key: string }>(
      `WITH found AS (SELECT key FROM ${keys} WHERE org = $1),
            made AS (
              INSERT INTO ${keys} (key, org)
              SELECT CASE WHEN $1 = $2 AND NOT EXISTS (SELECT 1 FROM ${keys} WHERE key = $2) THEN $2
                          ELSE 'o' || nextval($3::regclass) END, $1
               WHERE NOT EXISTS (SELECT 1 FROM found)
              ON CONFLICT DO NOTHING
              RETURNING key)
       SELECT key FROM found UNION ALL SELECT key FROM made`,
      [scope.org, DEFAULT_ORGANIZATION, sequence],
    );
    const key = rows[0]?.key;
    if (key !== undefined) return key;
  }
  throw new StoreError(
    'DB_ERROR',
    `no table key could be given to organization ${JSON.stringify(scope.org)}`,
  );
}

/**
 * The organization's key, or null when it has none yet (nothing was ever made for it), without giving one: for
 * those who only read. Before migration 011, an id is its own key (the default organization's names none).
 */
export async function findOrganizationKey(db: Queryable, scope: Scope): Promise<string | null> {
  try {
    const { rows } = await db.query<{ key: string }>(
      `SELECT key FROM ${qualified(scope.schema, 'organization_keys')} WHERE org = $1`,
      [scope.org],
    );
    return rows[0]?.key ?? null;
  } catch (error) {
    if (answeredWith(error, 'no such table')) return scope.org;
    throw error;
  }
}
