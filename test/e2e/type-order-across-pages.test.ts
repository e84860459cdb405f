import { afterAll, describe, expect, it } from 'vitest';
import { documentedFields } from '../../src/load/declared-types.js';
import { runCli } from '../helpers/cli.js';
import { createTestDatabase } from '../helpers/database.js';
import { cliEnv } from '../helpers/e2e-env.js';
import { donePage, type HandMadeBody, startPageServer } from '../helpers/page-server.js';

/*
 * Types independent of order across pages and windows: the same posts, a string first or numbers first, on one page
 * or another, in one window or the next, give the same columns and the same text. Each scenario is served as two
 * windows of two pages at most; the report of a window is whatever `served` holds for its start.
 */

const db = await createTestDatabase();
let served: Readonly<Record<string, readonly (readonly string[])[]>> = {};
const server = await startPageServer({
  pages: (start) => {
    const pages = served[start] ?? [[]];
    const bodies: Record<string, HandMadeBody> = {};
    pages.forEach((records, i) => {
      bodies[i === 0 ? '' : `p${i}`] = {
        body: donePage(start, records, i + 1 < pages.length ? `p${i + 1}` : null),
      };
    });
    return bodies;
  },
});
afterAll(() => server.close());

const W1 = '2026-03-02';
const W2 = '2026-03-09';

// The string, then the numbers as the API may write them: exponents, trailing zeros, a negative zero, beyond int64,
// beyond a double's range.
const STRING = ['{"platform_post_id":1,"mixed":"n/a","count":"unknown"}'];
const NUMBERS_A = [
  '{"platform_post_id":2,"mixed":5,"count":7}',
  '{"platform_post_id":3,"mixed":1e3,"count":-12}',
  '{"platform_post_id":4,"mixed":1.50,"count":9007199254740993}',
  '{"platform_post_id":5,"mixed":12345678901234567890,"count":0}',
];
const NUMBERS_B = [
  '{"platform_post_id":6,"mixed":-0.0,"count":-0}',
  '{"platform_post_id":7,"mixed":1E+2,"count":9223372036854775807}',
  '{"platform_post_id":8,"mixed":2.5e-3,"count":-9223372036854775808}',
  '{"platform_post_id":9,"mixed":1e400,"count":42}',
];

const EXPECTED = {
  columns: [
    { field: 'count', column_name: 'count', type: 'text' },
    { field: 'mixed', column_name: 'mixed', type: 'text' },
  ],
  rows: [
    { id: '1', count: 'unknown', mixed: 'n/a' },
    { id: '2', count: '7', mixed: '5' },
    { id: '3', count: '-12', mixed: '1000' },
    { id: '4', count: '9007199254740993', mixed: '1.50' },
    { id: '5', count: '0', mixed: '12345678901234567890' },
    { id: '6', count: '0', mixed: '0.0' },
    { id: '7', count: '9223372036854775807', mixed: '100' },
    { id: '8', count: '-9223372036854775808', mixed: '0.0025' },
    { id: '9', count: '42', mixed: `1${'0'.repeat(400)}` },
  ],
};

let schemas = 0;
/** Loads the two windows, one backfill each (the first window committed before the second is read), or both in one. */
async function load(
  windows: Readonly<Record<string, readonly (readonly string[])[]>>,
  runs: 'one' | 'each',
): Promise<string> {
  served = windows;
  schemas += 1;
  const schema = `across_${schemas}`;
  const ranges =
    runs === 'one'
      ? [['2026-03-02', '2026-03-15']]
      : [
          ['2026-03-02', '2026-03-08'],
          ['2026-03-09', '2026-03-15'],
        ];
  for (const [from, to] of ranges) {
    const result = await runCli(
      [
        'backfill',
        '--from',
        from!,
        '--to',
        to!,
        '--schema',
        schema,
        '--window-days',
        '7',
        '--window-attempts',
        '1',
      ],
      cliEnv(server, db.url),
    );
    expect(result.code, result.stderr.slice(-1500)).toBe(0);
  }
  return schema;
}

/** The schema's field columns (but the documented fields' columns, which every schema starts with) with their types, and its rows by post id, as text. */
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
    `SELECT platform_post_id::text AS id, ${list} FROM ${schema}.posts ORDER BY platform_post_id`,
  );
  return { columns, rows };
}

describe('types independent of the order of posts across pages and windows (the built CLI against hand-made pages)', () => {
  it('gives strings and numbers one text column with the same text, the string on the first page or a later one', async () => {
    const stringFirst = await load({ [W1]: [STRING, NUMBERS_A], [W2]: [NUMBERS_B] }, 'one');
    const stringLater = await load({ [W1]: [NUMBERS_A, STRING], [W2]: [NUMBERS_B] }, 'one');
    const stringLast = await load({ [W1]: [NUMBERS_A, NUMBERS_B], [W2]: [STRING] }, 'one');
    expect(await table(stringFirst)).toEqual(EXPECTED);
    expect(await table(stringLater)).toEqual(EXPECTED);
    expect(await table(stringLast)).toEqual(EXPECTED);
  });

  it('gives the same table when the string comes in a later run, after the numbers were committed', async () => {
    const stringFirst = await load({ [W1]: [STRING], [W2]: [NUMBERS_B, NUMBERS_A] }, 'each');
    const stringLast = await load({ [W1]: [NUMBERS_B, NUMBERS_A], [W2]: [STRING] }, 'each');
    expect(await table(stringFirst)).toEqual(EXPECTED);
    expect(await table(stringLast)).toEqual(EXPECTED);
  });
});
