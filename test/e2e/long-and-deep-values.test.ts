import { randomBytes } from 'node:crypto';
import { afterAll, describe, expect, it } from 'vitest';
import { runCli } from '../helpers/cli.js';
import { createTestDatabase } from '../helpers/database.js';
import { cliEnv } from '../helpers/e2e-env.js';
import { donePage, startPageServer } from '../helpers/page-server.js';

/*
 * Long and deep values: a custom segment name and value far over the btree limit of an index row load (the
 * segments' key holds their digests); an array nested 50,000 deep is refused in one line that says so, not with a
 * stack overflow, on every run the same.
 */

// Random bytes as hex do not compress: the index row would hold them whole.
const LONG_VALUE = randomBytes(6000).toString('hex');
const LONG_NAME = `Campaign ${randomBytes(2000).toString('hex')}`;
const DEEP = `${'['.repeat(50_000)}${']'.repeat(50_000)}`;

const db = await createTestDatabase();
const server = await startPageServer({
  pages: (start) => {
    const records: Record<string, string[]> = {
      '2026-03-02': [
        `{"platform_post_id":1,"custom_segments":[{"name":"Region","value":"${LONG_VALUE}"},{"name":"${LONG_NAME}","value":"x"}]}`,
      ],
      '2026-03-09': ['{"platform_post_id":2,"v":1}', `{"platform_post_id":3,"deep":${DEEP}}`],
    };
    return { '': { body: donePage(start, records[start] ?? [], null) } };
  },
});
afterAll(() => server.close());

function backfill(from: string, to: string, schema: string) {
  return runCli(
    ['backfill', '--from', from, '--to', to, '--schema', schema, '--window-attempts', '1'],
    cliEnv(server, db.url),
  );
}

describe('long and deep values (the built CLI against hand-made pages)', () => {
  it('loads custom segment names and values of any length', async () => {
    const result = await backfill('2026-03-02', '2026-03-08', 'long');
    expect(result.code, result.stderr.slice(-1500)).toBe(0);
    const { rows } = await db.pool.query<{ name: string; value: string }>(
      'SELECT name, value FROM long.post_custom_segments',
    );
    expect(rows.sort((a, b) => a.value.length - b.value.length)).toEqual([
      { name: LONG_NAME, value: 'x' },
      { name: 'Region', value: LONG_VALUE },
    ]);
  });

  it('refuses a value nested 50,000 deep in one line that says so, on every run', async () => {
    for (let run = 0; run < 2; run += 1) {
      const result = await backfill('2026-03-09', '2026-03-15', 'deep');
      expect(result.code, result.stderr.slice(-1500)).toBe(3);
      expect(result.stderr).toMatch(
        /^post-reports-etl: .*report 2026-03-09, page 1.*nests too deep to be read/m,
      );
      expect(result.stderr).not.toMatch(/^\s+at /m);
    }
  });
});
