/*
 * status --calendar and --html on a loaded schema whose windows stand every way a day can: final, open (the week
 * reaching today), failed (its error text hostile HTML), in progress (a live claim, held here), an attempt no run
 * holds (interrupted: its days never loaded), and days never loaded. The cells of each state, on a terminal, in a
 * pipe and in the page as headless Chromium builds it, are counted against the state tables.
 */
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { windowClaimKey } from '../../../src/load/locks.js';
import { type RunningSimulator, startSimulator } from '../../../src/simulator/server.js';
import { dumpDom, needChromium } from '../../helpers/chromium.js';
import { runCli } from '../../helpers/cli.js';
import { createTestDatabase } from '../../helpers/database.js';
import { cliEnv } from '../../helpers/e2e-env.js';
import { runOnTerminal, terminalLines } from '../../helpers/terminal.js';
import { TODAY } from '../../helpers/today.js';

const db = await createTestDatabase();
let sim: RunningSimulator;
let dir: string;
let claim: pg.PoolClient;

const SCHEMA = 'history';
const FAILED = { start: '2026-10-05', end: '2026-10-11' };
const CLAIMED = { start: '2026-08-03', end: '2026-08-09' };
const INTERRUPTED = { start: '2026-07-06', end: '2026-07-12' };
const HOSTILE = 'REPORT_FAILED: <script>alert("x")</script> & <img src=x onerror=alert(1)>';

const STATES = ['final', 'open', 'failed', 'in progress', 'never loaded'] as const;
type State = (typeof STATES)[number];
const CHARACTERS: Record<State, string> = {
  final: '#',
  open: 'o',
  failed: 'X',
  'in progress': '>',
  'never loaded': '.',
};

beforeAll(async () => {
  sim = await startSimulator({ seed: 5, postsPerDay: 4 });
  dir = await mkdtemp(join(tmpdir(), 'status-calendar-'));
  const loaded = await runCli(
    ['backfill', '--from', '2026-09-14', '--to', TODAY, '--schema', SCHEMA],
    cliEnv(sim, db.url),
  );
  expect(loaded.code, loaded.stderr.slice(-2000)).toBe(0);
  const windows = `${SCHEMA}.report_windows`;
  await db.pool.query(
    `UPDATE ${windows} SET status = 'failed', last_error = $3 WHERE window_start = $1 AND window_end = $2`,
    [FAILED.start, FAILED.end, HOSTILE],
  );
  for (const [w, status] of [
    [CLAIMED, 'extracting'],
    [INTERRUPTED, 'staging'],
  ] as const) {
    await db.pool.query(
      `INSERT INTO ${windows} (org, window_start, window_end, filters, status, attempts, started_at)
       VALUES ('default', $1, $2, '{}', $3, 1, now())`,
      [w.start, w.end, status],
    );
  }
  // A live run's claim on the window, as a run's claims connection holds it.
  claim = await db.pool.connect();
  await claim.query('SELECT pg_advisory_lock(hashtextextended($1, 0))', [
    windowClaimKey({ schema: SCHEMA, org: 'default' }, CLAIMED),
  ]);
});
afterAll(async () => {
  claim?.release();
  await sim.close();
  await rm(dir, { recursive: true, force: true });
});

/** Each state's days of the year up to today, the default organization's, read from report_windows on their own terms. */
async function expectedCounts(): Promise<Record<State, number>> {
  const { rows } = await db.pool.query<{ state: State; days: number }>(
    `WITH days AS (SELECT d::date AS day FROM generate_series('2026-01-01'::date, $1::date, interval '1 day') d)
     SELECT CASE WHEN w.window_start IS NULL THEN 'never loaded'
                 WHEN w.status = 'failed' THEN 'failed'
                 WHEN w.window_start = $2::date THEN 'in progress'
                 WHEN w.row_count IS NULL THEN 'never loaded'
                 WHEN days.day <= w.loaded_through THEN 'final'
                 ELSE 'open' END AS state, count(*)::int AS days
       FROM days LEFT JOIN ${SCHEMA}.report_windows w
         ON w.org = 'default' AND days.day BETWEEN w.window_start AND w.window_end
      GROUP BY 1`,
    [TODAY, CLAIMED.start],
  );
  const counts = Object.fromEntries(STATES.map((s) => [s, 0])) as Record<State, number>;
  for (const row of rows) counts[row.state] = row.days;
  return counts;
}

/** The cells of each state in the grid's lines (those a weekday starts). */
function countCells(lines: readonly string[]): Record<State, number> {
  const grid = lines.filter((l) => /^(Mon|Tue|Wed|Thu|Fri|Sat|Sun)\b/.test(l)).map((l) => l.slice(4));
  expect(grid).toHaveLength(7);
  return Object.fromEntries(STATES.map((s) => [s, grid.join('').split(CHARACTERS[s]).length - 1])) as Record<
    State,
    number
  >;
}

const env = () => ({ DATABASE_URL: db.url, POST_REPORTS_SCHEMA: SCHEMA });

describe('status --calendar', () => {
  it('in a pipe: plain text, a character per state, the legend in words, the cells as the state tables say', async () => {
    const expected = await expectedCounts();
    expect(
      Object.values(expected).every((n) => n > 0),
      JSON.stringify(expected),
    ).toBe(true);
    const result = await runCli(['status', '--calendar'], env());
    expect(result.code, result.stderr).toBe(0);
    // biome-ignore lint/suspicious/noControlCharactersInRegex: no escape sequence in a pipe
    expect(result.stdout).not.toMatch(/\u001b/);
    const lines = result.stdout.split('\n');
    expect(lines[0]).toBe(`schema ${SCHEMA}, 2026: ${STATES.map((s) => `${expected[s]} ${s}`).join(', ')}`);
    expect(countCells(lines)).toEqual(expected);
    expect(result.stdout).toContain(
      '# final   o open   X failed   > in progress   . never loaded   (blank: days to come)',
    );
  });

  it('on a terminal: the same cells, coloured, and without colour under NO_COLOR', async () => {
    const expected = await expectedCounts();
    const coloured = await runOnTerminal(['status', '--calendar'], env());
    expect(coloured.code, coloured.output).toBe(0);
    expect(coloured.output).toContain('\u001b[1;31mX\u001b[0m');
    expect(countCells(terminalLines(coloured.output))).toEqual(expected);

    const plain = await runOnTerminal(['status', '--calendar'], { ...env(), NO_COLOR: '1' });
    expect(plain.code, plain.output).toBe(0);
    // biome-ignore lint/suspicious/noControlCharactersInRegex: NO_COLOR: no colour
    expect(plain.output).not.toMatch(/\u001b\[[0-9;]*m/);
    expect(countCells(terminalLines(plain.output))).toEqual(expected);
  });

  it('refuses --json beside it, and a bad --year, in one line (exit 2)', async () => {
    for (const args of [
      ['--calendar', '--json'],
      ['--calendar', '--year', '26'],
    ]) {
      const result = await runCli(['status', ...args], env());
      expect(result.code, result.stderr).toBe(2);
      expect(result.stderr).toMatch(/--json|--year/);
    }
  });
});

describe('status --html', () => {
  it('writes one self-contained page whose cells, as Chromium builds them, are as the state tables say', async () => {
    needChromium();
    const expected = await expectedCounts();
    const file = join(dir, 'history.html');
    const result = await runCli(['status', '--html', file], env());
    expect(result.code, result.stderr).toBe(0);
    const html = await readFile(file, 'utf8');
    // Nothing fetched, nothing run: no script, no link, no source, no url().
    expect(html).not.toMatch(/<script|<link|<[^>]*\s(?:src|href)=|url\(|@import/i);

    const dom = dumpDom(file);
    const cells = Object.fromEntries(
      STATES.map((s) => [s, dom.split(`data-state="${s}"`).length - 1]),
    ) as Record<State, number>;
    expect(cells).toEqual(expected);
    // The hostile error is text in the failed days' rows, never an element.
    expect(dom).not.toMatch(/<script|<img/i);
    const failedRows =
      dom.split('&lt;script&gt;alert("x")&lt;/script&gt; &amp; &lt;img src=x onerror=alert(1)&gt;').length -
      1;
    expect(failedRows).toBe(expected.failed);
    // A row per day a window covers: every state but never loaded, and the interrupted week's days.
    const rows = dom.match(/<tr class="s-[a-z-]+-row">/g) ?? [];
    expect(rows).toHaveLength(expected.final + expected.open + expected.failed + expected['in progress'] + 7);
  });
});

describe('status --html to a place it cannot write', () => {
  it('is one line naming the file, exit 2, and leaves nothing behind', async () => {
    const file = join(dir, 'no-such-directory', 'history.html');
    const result = await runCli(['status', '--html', file], env());
    expect(result.code, result.stderr).toBe(2);
    const lines = result.stderr.trim().split('\n');
    expect(lines).toHaveLength(1);
    expect(lines[0]).toContain(`--html ${JSON.stringify(file)} could not be written (ENOENT)`);
  });
});

describe('status --calendar --all-organizations', () => {
  it("draws each organization's year, each from its own windows", async () => {
    await db.pool.query(
      `INSERT INTO ${SCHEMA}.sync_state (org, post_id_field, filters) VALUES ('acme', 'platform_post_id', '{}');
       INSERT INTO ${SCHEMA}.report_windows (org, window_start, window_end, filters, status, row_count, loaded_through)
       VALUES ('acme', '2026-11-16', '2026-11-22', '{}', 'loaded', 3, '2026-11-22')`,
    );
    const result = await runCli(['status', '--calendar', '--all-organizations'], env());
    expect(result.code, result.stderr).toBe(0);
    const expected = await expectedCounts();
    const [acme, own] = result.stdout.split('\n\n');
    expect(acme?.split('\n')[0]).toBe(
      `organization acme of schema ${SCHEMA}, 2026: 7 final, 0 open, 0 failed, 0 in progress, ${expected.final + expected.open + expected.failed + expected['in progress'] + expected['never loaded'] - 7} never loaded`,
    );
    expect(countCells(acme?.split('\n') ?? [])).toMatchObject({ final: 7, failed: 0 });
    expect(countCells(own?.split('\n') ?? [])).toEqual(expected);
  });
});
