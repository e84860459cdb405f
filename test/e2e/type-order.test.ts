import fc from 'fast-check';
import { afterAll, describe, expect, it } from 'vitest';
import { documentedFields } from '../../src/load/declared-types.js';
import { type CliResult, runCli } from '../helpers/cli.js';
import { createTestDatabase } from '../helpers/database.js';
import { cliEnv } from '../helpers/e2e-env.js';
import { donePage, startPageServer } from '../helpers/page-server.js';

/*
 * Types independent of order: the same posts in any order give the same columns and values, or fail alike. The
 * page served is whatever `served` holds when the report is read.
 */

const db = await createTestDatabase();
let served: string[] = [];
const server = await startPageServer({ pages: (start) => ({ '': { body: donePage(start, served, null) } }) });
afterAll(() => server.close());

let schemas = 0;
async function load(records: readonly string[]): Promise<{ result: CliResult; schema: string }> {
  served = [...records];
  schemas += 1;
  const schema = `order_${schemas}`;
  const result = await runCli(
    ['backfill', '--from', '2026-03-02', '--to', '2026-03-08', '--schema', schema, '--window-attempts', '1'],
    cliEnv(server, db.url),
  );
  return { result, schema };
}

/** The schema's columns (but the documented fields' columns, which every schema starts with) with their types and its rows ordered by post id, each value as text. */
async function table(schema: string): Promise<unknown> {
  const { rows: columns } = await db.pool.query<{ field: string; column_name: string; type: string }>(
    `SELECT f.field, f.column_name, format_type(a.atttypid, a.atttypmod) AS type
       FROM ${schema}.field_columns f
       JOIN pg_attribute a ON a.attrelid = to_regclass($1) AND a.attname = f.column_name
      WHERE NOT f.field = ANY($2)
      ORDER BY f.field`,
    [`${schema}.posts`, documentedFields('platform_post_id')],
  );
  const list = columns.map((c) => `${JSON.stringify(c.column_name)}::text`).join(', ');
  const { rows } = await db.pool.query(
    `SELECT platform_post_id::text AS id${list === '' ? '' : `, ${list}`} FROM ${schema}.posts ORDER BY platform_post_id`,
  );
  return { columns, rows };
}

describe('types independent of the order of posts (the built CLI against hand-made pages)', () => {
  it('gives a field with strings and numbers a text column holding both, in either order', async () => {
    const posts = ['{"platform_post_id":1,"mixed":"n/a"}', '{"platform_post_id":2,"mixed":5}'];
    const first = await load(posts);
    const second = await load([...posts].reverse());
    expect(first.result.code, first.result.stderr.slice(-1500)).toBe(0);
    expect(second.result.code, second.result.stderr.slice(-1500)).toBe(0);
    const expected = {
      columns: [{ field: 'mixed', column_name: 'mixed', type: 'text' }],
      rows: [
        { id: '1', mixed: 'n/a' },
        { id: '2', mixed: '5' },
      ],
    };
    expect(await table(first.schema)).toEqual(expected);
    expect(await table(second.schema)).toEqual(expected);
  });

  it('names a post without an id as missing', async () => {
    const { result } = await load(['{"platform_post_id":1}', '{"name":"no id"}']);
    expect(result.code).toBe(3);
    expect(result.stderr).toMatch(
      /record 2 of page 1 of window 2026-03-02\.\.2026-03-08: post id is missing/,
    );
  });

  it('loads a page and the same page shuffled into identical tables', async () => {
    const value = fc.oneof(
      fc.integer({ min: -1000, max: 1000 }).map(String),
      fc.constantFrom('1.5', '-0.25', '12345678901234567890', '1e3'),
      fc.constantFrom('"text"', '"7"', '""', '"n/a"'),
      fc.constantFrom('true', 'false', 'null', '{"k":[1,2.50]}', '[]'),
    );
    const post = fc.dictionary(fc.constantFrom('alpha', 'beta', 'gamma', 'delta'), value, { maxKeys: 4 });
    const page = fc.array(post, { minLength: 1, maxLength: 6 }).chain((posts) =>
      fc.tuple(
        fc.constant(posts),
        fc.shuffledSubarray(
          posts.map((_, i) => i),
          { minLength: posts.length },
        ),
      ),
    );
    await fc.assert(
      fc.asyncProperty(page, async ([posts, order]) => {
        const records = posts.map(
          (fields, i) =>
            `{"platform_post_id":${i + 1}${Object.entries(fields)
              .map(([k, v]) => `,"${k}":${v}`)
              .join('')}}`,
        );
        const first = await load(records);
        const second = await load(order.map((i) => records[i]!));
        expect(second.result.code).toBe(first.result.code);
        if (first.result.code === 0) expect(await table(second.schema)).toEqual(await table(first.schema));
      }),
      { numRuns: 8 },
    );
  });
});
