import { afterAll, describe, expect, it } from 'vitest';
import { runCli } from '../helpers/cli.js';
import { createTestDatabase } from '../helpers/database.js';
import { cliEnv } from '../helpers/e2e-env.js';
import { donePage, type HandMadeBody, startPageServer } from '../helpers/page-server.js';

/*
 * Bounds an API answering beyond any real report cannot exceed: the pages of one report, the length of a page
 * token and of a report id. Each fails its window in one line that says what and how much, and loads nothing.
 */

const db = await createTestDatabase();
const RECORD = '{"platform_post_id":1,"brand":"Acme"}';
// Per window (its start date), what the server answers.
const reports: Record<string, Record<string, HandMadeBody>> = {
  // A report whose pages never end: every page leads to the next.
  '2026-03-02': Object.fromEntries(
    Array.from({ length: 50 }, (_, i) => [
      i === 0 ? '' : `t${i}`,
      { body: donePage('2026-03-02', [RECORD], `t${i + 1}`) },
    ]),
  ),
  '2026-03-09': { '': { body: donePage('2026-03-09', [RECORD], 'x'.repeat(5000)) } },
  '2026-03-16': { '': { body: donePage('2026-03-16', [RECORD], null) } },
  // A page of 300 kB.
  '2026-03-23': {
    '': { body: donePage('2026-03-23', [`{"platform_post_id":1,"note":"${'n'.repeat(300_000)}"}`], null) },
  },
};
const server = await startPageServer({
  pages: (start) => reports[start] ?? {},
  // The third window's report id is as long as an answer may make it.
  reportId: (start) => (start === '2026-03-16' ? `r${'9'.repeat(400)}` : start),
});
afterAll(() => server.close());

async function backfill(from: string, to: string, schema: string, extra: Record<string, string> = {}) {
  const result = await runCli(
    ['backfill', '--from', from, '--to', to, '--schema', schema, '--window-attempts', '1'],
    cliEnv(server, db.url, extra),
  );
  const { rows } = await db.pool.query<{ n: number }>(`SELECT count(*)::int AS n FROM ${schema}.posts`);
  return { ...result, loaded: rows[0]!.n };
}

describe('bounds of what one report may be (the built CLI against hand-made pages)', () => {
  it('fails a report with more pages than POST_REPORTS_MAX_REPORT_PAGES, naming the setting', async () => {
    const result = await backfill('2026-03-02', '2026-03-08', 'bounds_pages', {
      POST_REPORTS_MAX_REPORT_PAGES: '5',
    });
    expect(result.code, result.stderr.slice(-1500)).toBe(3);
    expect(result.stderr).toContain(
      'report 2026-03-02 goes on past page 5, more than the 5 pages a report may have (POST_REPORTS_MAX_REPORT_PAGES): raise it if the report is that large',
    );
    expect(result.loaded).toBe(0);
  });

  it('fails a page token longer than a token may be', async () => {
    const result = await backfill('2026-03-09', '2026-03-15', 'bounds_token');
    expect(result.code, result.stderr.slice(-1500)).toBe(3);
    expect(result.stderr).toContain(
      'report 2026-03-09, page 1: next_page is 5000 characters long, more than the 4096 a page token may be: the answer is refused',
    );
    expect(result.loaded).toBe(0);
  });

  it('fails a report id longer than an id may be', async () => {
    const result = await backfill('2026-03-16', '2026-03-22', 'bounds_id');
    expect(result.code, result.stderr.slice(-1500)).toBe(3);
    expect(result.stderr).toContain(
      'POST /reports/posts for 2026-03-16..2026-03-22: the report id is 401 characters long, more than the 256 a report id may be: the answer is refused',
    );
    expect(result.loaded).toBe(0);
  });

  it('holds the bodies of all windows within POST_REPORTS_BODY_MEMORY_BYTES: one body takes its share', async () => {
    // 600,000 bytes for 2 windows at once, 3 bodies a window: 100,000 bytes a body.
    const refused = await runCli(
      [
        'backfill',
        '--from',
        '2026-03-23',
        '--to',
        '2026-03-29',
        '--schema',
        'bounds_memory',
        '--window-attempts',
        '1',
        '--concurrency',
        '2',
      ],
      cliEnv(server, db.url, { POST_REPORTS_BODY_MEMORY_BYTES: '600000' }),
    );
    expect(refused.code, refused.stderr.slice(-1500)).toBe(3);
    expect(refused.stderr).toMatch(
      /more than the 100000 bytes read \(a response's share of POST_REPORTS_BODY_MEMORY_BYTES with POST_REPORTS_CONCURRENCY windows at once\): refused without reading the rest/,
    );
    // The same page within the default budget loads.
    const loaded = await backfill('2026-03-23', '2026-03-29', 'bounds_memory');
    expect(loaded.code, loaded.stderr.slice(-1500)).toBe(0);
    expect(loaded.loaded).toBe(1);
  });
});
