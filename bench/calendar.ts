/*
 * npm run bench:calendar -- --database-url URL: how long `status --calendar` and `status --html` take on a schema
 * of three years of daily windows for three organizations (a few failed, a few never loaded, the last open). It
 * makes a schema of its own in that database (calendar_bench_ and a random suffix: none of the database's is
 * touched), times the built
 * CLI end to end (median of 7 runs each, beside `--version`: the CLI's start alone), and, in this process, the
 * history's read (one query) and the drawing. Prints the figures; the schema is dropped at the end.
 */
import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import pg from 'pg';
import { calendarLines, calendarYear, yearsOf } from '../src/cli/calendar.js';
import { calendarPage } from '../src/cli/calendar-html.js';
import { migrate } from '../src/load/migrate.js';
import { createLogger } from '../src/logger.js';
import { readHistory } from '../src/pipeline/history-calendar.js';

const SCHEMA = `calendar_bench_${randomBytes(4).toString('hex')}`;
const ORGS = ['acme', 'default', 'globex'];
const TODAY = '2026-11-28';
const FIRST = '2023-11-28';
const CLI = fileURLToPath(new URL('../bin/main.js', import.meta.url));
const RUNS = 7;

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)] ?? 0;
}

function timeCli(args: string[], databaseUrl: string): number {
  const times: number[] = [];
  for (let i = 0; i < RUNS; i++) {
    const started = performance.now();
    const run = spawnSync(process.execPath, [CLI, ...args], {
      env: {
        PATH: process.env.PATH ?? '',
        DATABASE_URL: databaseUrl,
        POST_REPORTS_NOW: `${TODAY}T12:00:00Z`,
        LOG_FORMAT: 'json',
      },
      encoding: 'utf8',
    });
    times.push(performance.now() - started);
    if (run.status !== 0) throw new Error(`${args.join(' ')} exited ${run.status}: ${run.stderr}`);
  }
  return median(times);
}

async function main(): Promise<void> {
  const { values } = parseArgs({ options: { 'database-url': { type: 'string' } } });
  const databaseUrl = values['database-url'];
  if (databaseUrl === undefined) {
    process.stderr.write('bench:calendar: name the database: npm run bench:calendar -- --database-url URL\n');
    process.exit(2);
  }
  const pool = new pg.Pool({ connectionString: databaseUrl, max: 2 });
  try {
    await migrate(
      pool,
      { schema: SCHEMA, postIdField: 'platform_post_id' },
      createLogger({ level: 'silent' }),
    );
    const s = pg.escapeIdentifier(SCHEMA);
    await pool.query(
      `INSERT INTO ${s}.sync_state (org, post_id_field, filters) SELECT o, 'platform_post_id', '{}' FROM unnest($1::text[]) o`,
      [ORGS],
    );
    // Every 37th day failed, every 29th never loaded, the last day open: the same picture on every run.
    await pool.query(
      `INSERT INTO ${s}.report_windows (org, window_start, window_end, filters, status, row_count, loaded_through,
                                        report_id, last_error, finished_at, report_made_at)
       SELECT o, d, d, '{}', CASE WHEN n % 37 = 0 THEN 'failed' ELSE 'loaded' END,
              CASE WHEN n % 37 = 0 THEN NULL ELSE 1000 + n END,
              CASE WHEN d = $3::date - 1 THEN d - 1 ELSE d END, 'report-' || n,
              CASE WHEN n % 37 = 0 THEN 'REPORT_FAILED: <the API said "no">' END, now(), now()
         FROM unnest($1::text[]) o,
              LATERAL (SELECT g::date AS d, row_number() OVER () AS n
                         FROM generate_series($2::date, $3::date - 1, interval '1 day') g) days
        WHERE n % 29 <> 0`,
      [ORGS, FIRST, TODAY],
    );
    const { rows } = await pool.query<{ windows: number }>(
      `SELECT count(*)::int AS windows FROM ${s}.report_windows`,
    );

    const reads: number[] = [];
    const draws: number[] = [];
    for (let i = 0; i < RUNS; i++) {
      const started = performance.now();
      const histories = await readHistory(pool, SCHEMA, ORGS, null, null);
      const read = performance.now();
      const years = yearsOf(histories, TODAY);
      const calendars = histories.flatMap((h) => years.map((y) => calendarYear(h, y, TODAY)));
      for (const c of calendars) calendarLines(c, c.org, true);
      calendarPage(SCHEMA, histories, calendars, years, TODAY);
      reads.push(read - started);
      draws.push(performance.now() - read);
    }
    const base = ['--schema', SCHEMA, '--all-organizations'];
    const pages = mkdtempSync(join(tmpdir(), 'calendar-bench-'));
    const figures = {
      windows: rows[0]?.windows ?? 0,
      organizations: ORGS.length,
      readMs: median(reads),
      drawMs: median(draws),
      cliVersionMs: timeCli(['--version'], databaseUrl),
      cliStatusMs: timeCli(['status', '--json', ...base], databaseUrl),
      cliCalendarMs: timeCli(['status', '--calendar', ...base], databaseUrl),
      cliHtmlMs: timeCli(['status', '--html', join(pages, 'history.html'), ...base], databaseUrl),
    };
    rmSync(pages, { recursive: true, force: true });
    process.stdout.write(
      `${JSON.stringify(figures, (_, v) => (typeof v === 'number' ? Math.round(v) : v))}\n`,
    );
  } finally {
    // Its own schema (the random name above): made here, dropped here, also after a failure.
    await pool.query(`DROP SCHEMA IF EXISTS ${pg.escapeIdentifier(SCHEMA)} CASCADE`);
    await pool.end();
  }
}

await main();
