import { afterAll, describe, expect, it } from 'vitest';
import { runCli } from '../helpers/cli.js';
import { createTestDatabase } from '../helpers/database.js';
import { cliEnv } from '../helpers/e2e-env.js';
import { donePage, startPageServer } from '../helpers/page-server.js';

/*
 * A key repeated in one post: one rule whichever parser reads the page. A key repeated with another value
 * refuses the page naming the key and the record; a key repeated with the same value changes nothing. The second
 * week's page carries a key written with an escape, which sends it to the other parser.
 */

const REPEATED = '{"platform_post_id":1,"platform_post_id":2,"v":"first","v":"second"}';
const SAME = '{"platform_post_id":3,"w":"same","w":"same"}';
const ESCAPED = '{"platform_post_id":4,"\\u0065scaped":1}';
const db = await createTestDatabase();
const server = await startPageServer({
  pages: (start) => {
    const pages: Record<string, string[]> = {
      '2026-03-02': ['{"platform_post_id":9}', REPEATED],
      '2026-03-09': [ESCAPED, REPEATED],
      '2026-03-16': [SAME],
      '2026-03-23': [ESCAPED, SAME.replace('3', '5')],
    };
    return { '': { body: donePage(start, pages[start] ?? [], null) } };
  },
});
afterAll(() => server.close());

function backfill(from: string, to: string, schema: string) {
  return runCli(
    ['backfill', '--from', from, '--to', to, '--schema', schema, '--window-attempts', '1'],
    cliEnv(server, db.url),
  );
}

describe('a key repeated in a post (the built CLI against hand-made pages)', () => {
  it.each([
    ['the fast parser', '2026-03-02', '2026-03-08', 'fast'],
    ['the parser an escaped key sends the page to', '2026-03-09', '2026-03-15', 'escaped'],
  ])('refuses the page on %s, naming the key and the record', async (_path, from, to, schema) => {
    const result = await backfill(from, to, schema);
    expect(result.code, result.stderr.slice(-1500)).toBe(3);
    expect(result.stderr).toMatch(
      new RegExp(
        `report ${from}, page 1 .*data\\[1\\] repeats the key "platform_post_id" with another value`,
      ),
    );
    const { rows } = await db.pool.query(`SELECT count(*)::int AS n FROM ${schema}.posts`);
    expect(rows[0]).toEqual({ n: 0 });
  });

  it('loads a key repeated with the same value once, on both parsers', async () => {
    const result = await backfill('2026-03-16', '2026-03-29', 'same');
    expect(result.code, result.stderr.slice(-1500)).toBe(0);
    const { rows } = await db.pool.query(
      'SELECT platform_post_id::text AS id, w, escaped FROM same.posts ORDER BY 1',
    );
    expect(rows).toEqual([
      { id: '3', w: 'same', escaped: null },
      { id: '4', w: null, escaped: '1' },
      { id: '5', w: 'same', escaped: null },
    ]);
  });
});
