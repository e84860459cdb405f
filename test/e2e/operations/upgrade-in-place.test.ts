/*
 * A schema written by the connector before migration 005 (a partition per loaded window) is upgraded in place by
 * the next run: every row kept, no report asked for again, the windows moved into period partitions keyed by
 * organization, and later reloads and syncs on the new layout exact.
 */
import { readFile } from 'node:fs/promises';
import pg from 'pg';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { type RunningSimulator, startSimulator } from '../../../src/simulator/server.js';
import { runCli } from '../../helpers/cli.js';
import { createTestDatabase } from '../../helpers/database.js';
import { cliEnv } from '../../helpers/e2e-env.js';
import { compareWithReference } from '../../helpers/reference-check.js';
import { TODAY } from '../../helpers/today.js';

const db = await createTestDatabase();
const SCHEMA = 'legacy';
const FROM = '2025-12-01';
const TO = '2026-01-11';
const FIXTURE = new URL('../../fixtures/legacy-window-partitions.sql', import.meta.url);
let sim: RunningSimulator;

beforeAll(async () => {
  // The fixture's run: same seed and posts a day, so the simulator's truth is what the old version loaded.
  sim = await startSimulator({ seed: 61, postsPerDay: 8 });
  const client = new pg.Client({ connectionString: db.url });
  await client.connect();
  try {
    await client.query(await readFile(FIXTURE, 'utf8'));
  } finally {
    await client.end();
  }
});
afterAll(async () => {
  await sim.close();
});

/**
 * Every post with its segments, and the record of each window, as text; without the columns an upgrade adds
 * (_org, _extra_fields), whose values the test checks on their own.
 */
async function contents(): Promise<{ posts: string[]; windows: string[] }> {
  const posts = await db.pool.query<{ doc: string }>(
    `SELECT (to_jsonb(p) - '_org' - '_extra_fields')::text || ' ' || COALESCE(
              (SELECT string_agg(s.name || '=' || s.value, ',' ORDER BY s.name, s.value)
                 FROM ${SCHEMA}.post_custom_segments s
                WHERE s.platform_post_id = p.platform_post_id AND s._window_start = p._window_start), '') AS doc
       FROM ${SCHEMA}.posts p ORDER BY 1`,
  );
  const windows = await db.pool.query<{ doc: string }>(
    `SELECT concat_ws('|', window_start, window_end, report_id, status, row_count, loaded_through) AS doc
       FROM ${SCHEMA}.report_windows ORDER BY 1`,
  );
  return { posts: posts.rows.map((r) => r.doc), windows: windows.rows.map((r) => r.doc) };
}

async function partitions(): Promise<string[]> {
  const { rows } = await db.pool.query<{ p: string }>(
    `SELECT c.relname || ' ' || pg_get_expr(c.relpartbound, c.oid) AS p
       FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
      WHERE i.inhparent IN (to_regclass($1), to_regclass($2)) ORDER BY 1`,
    [`${SCHEMA}.posts`, `${SCHEMA}.post_custom_segments`],
  );
  return rows.map((r) => r.p);
}

async function exact(from: string, to: string): Promise<string[]> {
  const reference = sim.referencePosts({ start_date: from, end_date: to });
  return (await compareWithReference(db.pool, SCHEMA, reference)).problems;
}

it('keeps every row and window record, asks the API for nothing, and reloads and syncs exactly after', async () => {
  const before = await contents();
  expect(before.posts).toHaveLength(336);
  expect(before.windows).toHaveLength(6);
  expect(await partitions()).toContain("posts_20251229_20260104 FOR VALUES IN ('2025-12-29')");

  const args = ['--schema', SCHEMA];
  const again = await runCli(['backfill', '--from', FROM, '--to', TO, ...args], cliEnv(sim, db.url));
  expect(again.code, again.stderr.slice(-2000)).toBe(0);
  expect(again.summary).toMatchObject({ reportsCreated: 0, posts: 0 });
  expect(await contents()).toEqual(before);
  const extra = await db.pool.query<{ n: number }>(
    `SELECT count(*)::int AS n FROM ${SCHEMA}.posts WHERE _extra_fields IS NOT NULL`,
  );
  expect(extra.rows[0]?.n).toBe(0);
  expect(await partitions()).toEqual([
    "post_custom_segments_y2025 FOR VALUES FROM ('default', '2025-01-01') TO ('default', '2026-01-01')",
    "post_custom_segments_y2026 FOR VALUES FROM ('default', '2026-01-01') TO ('default', '2027-01-01')",
    "posts_y2025 FOR VALUES FROM ('default', '2025-01-01') TO ('default', '2026-01-01')",
    "posts_y2026 FOR VALUES FROM ('default', '2026-01-01') TO ('default', '2027-01-01')",
  ]);
  const keys = await db.pool.query<{ def: string }>(
    `SELECT pg_get_constraintdef(oid) AS def FROM pg_constraint
      WHERE contype = 'p' AND conrelid IN (to_regclass($1), to_regclass($2)) ORDER BY 1`,
    [`${SCHEMA}.posts`, `${SCHEMA}.post_custom_segments`],
  );
  expect(keys.rows.map((r) => r.def)).toEqual(['PRIMARY KEY (_org, _window_start, platform_post_id)']);
  // The segments are keyed by hashes of their name and value (migrations 007 and 009), so that any length fits.
  const segmentKey = await db.pool.query<{ def: string }>(
    `SELECT pg_get_indexdef(indexrelid) AS def FROM pg_index
      WHERE indrelid = to_regclass($1) AND indisunique`,
    [`${SCHEMA}.post_custom_segments`],
  );
  expect(segmentKey.rows.map((r) => r.def.replace(/^.* USING btree /, ''))).toEqual([
    '(_org, _window_start, platform_post_id, hashtextextended(name, (0)::bigint), hashtextextended(value, (0)::bigint))',
  ]);
  expect(await exact(FROM, TO)).toEqual([]);

  // The window across the new year reloads in place; the others keep their report and rows.
  sim.advanceTime(4 * 3_600_000);
  const reload = await runCli(
    ['backfill', '--from', '2025-12-29', '--to', '2026-01-04', '--reload', ...args],
    cliEnv(sim, db.url),
  );
  expect(reload.code, reload.stderr.slice(-2000)).toBe(0);
  expect(reload.summary).toMatchObject({ reportsCreated: 1, posts: 56 });
  const reloaded = await contents();
  expect(reloaded.windows.filter((w, i) => w !== before.windows[i])).toHaveLength(1);
  expect(await exact(FROM, TO)).toEqual([]);

  // The sync continues from the end of the upgraded history to today.
  const sync = await runCli(['sync', '--start-date', '2026-01-12', ...args], cliEnv(sim, db.url));
  expect(sync.code, sync.stderr.slice(-2000)).toBe(0);
  expect(await exact(FROM, TODAY)).toEqual([]);
});
