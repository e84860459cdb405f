import { afterAll, describe, expect, it } from 'vitest';
import { runCli } from '../helpers/cli.js';
import { createTestDatabase } from '../helpers/database.js';
import { cliEnv } from '../helpers/e2e-env.js';
import { donePage, startPageServer } from '../helpers/page-server.js';

/*
 * Pages are bounded: next_page leading back to an earlier page (page 3 to page 2) fails the window with
 * PAGE_MALFORMED naming the report, after reading each page once, and the next run does not resume that report.
 */

const db = await createTestDatabase();
const server = await startPageServer({
  maxPages: 200,
  pages: (start) => ({
    '': { body: donePage(start, ['{"platform_post_id":1,"v":"a"}'], 'p2') },
    p2: { body: donePage(start, ['{"platform_post_id":2,"v":"b"}'], 'p3') },
    p3: { body: donePage(start, ['{"platform_post_id":3,"v":"c"}'], 'p2') },
  }),
});
afterAll(() => server.close());

const ARGS = [
  'backfill',
  '--from',
  '2026-03-02',
  '--to',
  '2026-03-08',
  '--schema',
  'cycle',
  '--window-attempts',
  '1',
];

describe('a next_page cycle (the built CLI against hand-made pages)', () => {
  it('fails the window naming the report after one pass, and does not resume that report', async () => {
    const first = await runCli(ARGS, cliEnv(server, db.url));
    expect(first.code, first.stderr.slice(-2000)).toBe(3);
    expect(first.stderr).toMatch(/report 2026-03-02, page 3: next_page "p2" leads back to page 2/);
    // The status poll, page 2, page 3 (and page 2 downloaded ahead at most).
    expect(server.pagesServed()).toBeLessThanOrEqual(5);
    const created = server.reportsCreated();
    const served = server.pagesServed();
    const second = await runCli(ARGS, cliEnv(server, db.url));
    expect(second.code, second.stderr.slice(-2000)).toBe(3);
    expect(second.stderr).toMatch(/leads back to page 2/);
    expect(server.reportsCreated()).toBe(created + 1);
    expect(server.pagesServed() - served).toBeLessThanOrEqual(5);
    const { rows } = await db.pool.query('SELECT count(*)::int AS n FROM cycle.posts');
    expect(rows[0]).toEqual({ n: 0 });
  });
});
