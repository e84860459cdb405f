import { afterAll, describe, expect, it } from 'vitest';
import { declaredTypes } from '../../src/load/declared-types.js';
import { startSimulator } from '../../src/simulator/server.js';
import { runCli } from '../helpers/cli.js';
import { createTestDatabase } from '../helpers/database.js';
import { cliEnv } from '../helpers/e2e-env.js';
import { compareWithReference } from '../helpers/reference-check.js';

/*
 * One organization's API sends 2,000 field names no other sends, 100 a day over 20 days; another organization
 * then meets a field the schema has not seen. Every column of posts is shared by both: the first must not use
 * up the room of the second, and no value may be lost.
 */
const FIELDS_A_DAY = 100;
const DAYS = 20;
const extraFields: Record<string, Record<string, string>> = {};
for (let day = 1; day <= DAYS; day++) {
  const date = `2025-06-${String(day).padStart(2, '0')}`;
  const fields: Record<string, string> = {};
  for (let k = 0; k < FIELDS_A_DAY; k++) fields[`m${day}_${k}`] = `${day}${k}.${k}5`;
  extraFields[date] = fields;
}
// The other organization's new field: a number beyond a double.
extraFields['2025-07-01'] = { globex_only_metric: '12345678901234567890.125' };

const db = await createTestDatabase();
const sim = await startSimulator({
  seed: 61,
  extraFields,
  organizations: [
    { token: 'token-acme', seed: 3, postsPerDay: 3 },
    { token: 'token-globex', seed: 4, postsPerDay: 3 },
  ],
});
afterAll(() => sim.close());

const SCHEMA = 'budgeted';
const env = (org: string) => ({
  ...cliEnv(sim, db.url),
  POST_REPORTS_TOKEN: `token-${org}`,
  POST_REPORTS_ORGANIZATION: org,
});
const backfill = (org: string, from: string, to: string) =>
  runCli(['backfill', '--from', from, '--to', to, '--schema', SCHEMA, '--concurrency', '2'], env(org));

describe('a schema shared by organizations, one of whose API sends 2,000 new fields', () => {
  it('loads every post of that organization, its fields beyond its share in _extra_fields, exact, run after run', async () => {
    for (let run = 0; run < 2; run++) {
      const result = await backfill('acme', '2025-06-01', '2025-06-20');
      expect(result.code, result.stderr.slice(-1500)).toBe(0);
      if (run === 0) expect(result.stderr).toContain('kept in _extra_fields');
    }
    const reference = sim.referencePosts({ start_date: '2025-06-01', end_date: '2025-06-20' }, 'token-acme');
    expect(reference.length).toBe(DAYS * 3);
    const check = await compareWithReference(db.pool, SCHEMA, reference, 'platform_post_id', 'acme');
    expect(check.problems).toEqual([]);
    expect(check.posts).toBe(reference.length);
    // Its own columns for undocumented fields: a quarter of the default budget of 1,000, and not one more.
    const documented = declaredTypes('platform_post_id');
    const { rows } = await db.pool.query<{ field: string }>(
      `SELECT field FROM ${SCHEMA}.field_columns WHERE org = 'acme'`,
    );
    expect(rows.filter((r) => !documented.has(r.field)).length).toBe(250);
  });

  it('leaves the other organization room: a field the schema has not seen gets its own column, exact', async () => {
    const result = await backfill('globex', '2025-07-01', '2025-07-07');
    expect(result.code, result.stderr.slice(-1500)).toBe(0);
    const reference = sim.referencePosts(
      { start_date: '2025-07-01', end_date: '2025-07-07' },
      'token-globex',
    );
    expect(
      (await compareWithReference(db.pool, SCHEMA, reference, 'platform_post_id', 'globex')).problems,
    ).toEqual([]);
    const { rows } = await db.pool.query<{ column_name: string; org: string; value: string }>(
      `SELECT f.column_name, f.org,
              (SELECT max(globex_only_metric)::text FROM ${SCHEMA}.posts WHERE _org = 'globex') AS value
         FROM ${SCHEMA}.field_columns f WHERE f.field = 'globex_only_metric'`,
    );
    expect(rows).toEqual([
      { column_name: 'globex_only_metric', org: 'globex', value: '12345678901234567890.125' },
    ]);
  });
});
