/*
 * dbt-sources on a schema loaded from the simulator: the YAML parses, names the schema's tables and exactly their
 * columns as information_schema has them, describes every column, and checks freshness on _loaded_at as the
 * schedule asks; a schema the connector did not make is refused in one line.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { type RunningSimulator, startSimulator } from '../../../src/simulator/server.js';
import { runCli } from '../../helpers/cli.js';
import { createTestDatabase } from '../../helpers/database.js';
import { cliEnv } from '../../helpers/e2e-env.js';

const db = await createTestDatabase();
let sim: RunningSimulator;

const SCHEMA = 'warehouse';

beforeAll(async () => {
  sim = await startSimulator({ seed: 11, postsPerDay: 10 });
  const loaded = await runCli(
    ['backfill', '--from', '2026-06-01', '--to', '2026-06-14', '--schema', SCHEMA],
    cliEnv(sim, db.url),
  );
  expect(loaded.code, loaded.stderr.slice(-2000)).toBe(0);
  // The views of each post's latest row, as a schema that has them has them (made here where its migrations do not).
  await db.pool.query(`DO $$ BEGIN
    IF to_regclass('${SCHEMA}.posts_latest') IS NULL THEN
      CREATE VIEW ${SCHEMA}.posts_latest AS SELECT DISTINCT ON (_org, platform_post_id) * FROM ${SCHEMA}.posts
       ORDER BY _org, platform_post_id, _window_start DESC;
    END IF;
    IF to_regclass('${SCHEMA}.post_custom_segments_latest') IS NULL THEN
      CREATE VIEW ${SCHEMA}.post_custom_segments_latest AS SELECT s.* FROM ${SCHEMA}.post_custom_segments s
        JOIN ${SCHEMA}.posts_latest p USING (_org, platform_post_id, _window_start);
    END IF;
  END $$`);
});
afterAll(async () => {
  await sim.close();
});

interface Column {
  name: string;
  description: string;
  data_type: string;
}
interface Table {
  name: string;
  description: string;
  loaded_at_field?: string;
  freshness?: unknown;
  columns: Column[];
}

async function catalogColumns(table: string): Promise<{ name: string; type: string }[]> {
  const { rows } = await db.pool.query<{ name: string; type: string }>(
    `SELECT column_name AS name, data_type AS type FROM information_schema.columns
      WHERE table_schema = $1 AND table_name = $2 ORDER BY ordinal_position`,
    [SCHEMA, table],
  );
  return rows;
}

describe('dbt-sources', () => {
  it("prints the schema's tables and every column, described, with freshness from the schedule", async () => {
    const result = await runCli(['dbt-sources', '--schema', SCHEMA, '--schedule-hours', '12'], {
      DATABASE_URL: db.url,
    });
    expect(result.code, result.stderr).toBe(0);
    const document = parse(result.stdout) as {
      version: number;
      sources: { name: string; schema: string; tables: Table[] }[];
    };
    expect(document.version).toBe(2);
    expect(document.sources).toHaveLength(1);
    const source = document.sources[0]!;
    expect(source).toMatchObject({ name: SCHEMA, schema: SCHEMA });
    expect(source.tables.map((t) => t.name)).toEqual([
      'posts',
      'post_custom_segments',
      'posts_latest',
      'post_custom_segments_latest',
      'report_windows',
    ]);
    for (const table of source.tables) {
      expect(table.description, table.name).toMatch(/\S/);
      expect(
        table.columns.map((c) => ({ name: c.name, type: c.data_type })),
        table.name,
      ).toEqual(await catalogColumns(table.name));
      for (const column of table.columns)
        expect(column.description, `${table.name}.${column.name}`).toMatch(/\S/);
    }
    const [posts, segments, latest, latestSegments, windows] = source.tables as [
      Table,
      Table,
      Table,
      Table,
      Table,
    ];
    expect(posts.loaded_at_field).toBe('_loaded_at');
    // A view's freshness would scan all it reads: the table's stands for it.
    for (const view of [latest, latestSegments]) expect(view.freshness, view.name).toBeUndefined();
    expect(latest.columns.find((c) => c.name === 'total_spend')?.description).toBe(
      posts.columns.find((c) => c.name === 'total_spend')?.description,
    );
    expect(posts.freshness).toEqual({
      warn_after: { count: 18, period: 'hour' },
      error_after: { count: 30, period: 'hour' },
    });
    expect(segments.freshness).toBeUndefined();
    expect(windows.description).toMatch(/^Internal/);

    // Documented fields as the field dictionary has them; a field it does not name, by the API's name.
    const described = new Map(posts.columns.map((c) => [c.name, c.description]));
    expect(described.get('total_spend')).toMatch(/spend/i);
    expect(described.get('platform_post_id')).toMatch(/Identifier of the post/);
    const { rows: undocumented } = await db.pool.query<{ field: string; column_name: string }>(
      `SELECT field, column_name FROM ${SCHEMA}.field_columns WHERE field = ANY($1::text[])`,
      [['impressions', 'video_views', 'reach']],
    );
    expect(undocumented.length).toBeGreaterThan(0);
    for (const { field, column_name } of undocumented) {
      expect(described.get(column_name)).toBe(
        `The field the API sent as ${JSON.stringify(field)} (not described by the API's documentation).`,
      );
    }
  });

  it('takes warn_after and error_after outright', async () => {
    const result = await runCli(
      ['dbt-sources', '--schema', SCHEMA, '--warn-after', '30', '--error-after', '48'],
      { DATABASE_URL: db.url },
    );
    expect(result.code, result.stderr).toBe(0);
    const posts = (parse(result.stdout) as { sources: { tables: Table[] }[] }).sources[0]!.tables[0]!;
    expect(posts.freshness).toEqual({
      warn_after: { count: 30, period: 'hour' },
      error_after: { count: 48, period: 'hour' },
    });
  });

  it('refuses a schema the connector did not make, one that does not exist, and bad hours: exit 2, one line', async () => {
    await db.pool.query('CREATE SCHEMA not_ours; CREATE TABLE not_ours.posts (id int)');
    for (const [args, words] of [
      [['--schema', 'not_ours'], 'schema "not_ours" was not made by post-reports-etl'],
      [['--schema', 'nowhere'], 'schema "nowhere" does not exist'],
      [['--schema', SCHEMA, '--schedule-hours', 'nightly'], '--schedule-hours must be a number of hours'],
    ] as const) {
      const result = await runCli(['dbt-sources', ...args], { DATABASE_URL: db.url });
      expect(result.code, result.stderr).toBe(2);
      expect(result.stdout).toBe('');
      const lines = result.stderr.trim().split('\n');
      expect(lines, result.stderr).toHaveLength(1);
      expect(lines[0]).toContain(words);
    }
  });
});
