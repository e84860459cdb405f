import { randomBytes } from 'node:crypto';
import { cp, mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { StoreError } from '../../../src/errors.js';
import { migrate } from '../../../src/load/migrate.js';
import { organizationKey } from '../../../src/load/organization-keys.js';
import { createTestDatabase } from '../../helpers/database.js';
import { captureLogger } from './load-fixtures.js';

const db = await createTestDatabase();
const { logger } = captureLogger();
const ALL = [
  '001_initial.sql',
  '002_window_partitions.sql',
  '003_window_attempts.sql',
  '004_field_selection.sql',
  '005_period_partitions.sql',
  '006_report_age.sql',
  '007_segment_value_hash_key.sql',
  '008_organizations.sql',
  '009_segment_key_hash.sql',
  '010_column_budget.sql',
  '011_organization_keys.sql',
  '012_latest_views.sql',
];

describe('migrate', () => {
  it('creates the schema and tables once, even when two processes start together', async () => {
    const target = { schema: 'together', postIdField: 'platform_post_id' };
    const [a, b] = await Promise.all([migrate(db.pool, target, logger), migrate(db.pool, target, logger)]);
    expect([...a.applied, ...b.applied]).toEqual(ALL);
    const again = await migrate(db.pool, target, logger);
    expect(again.applied).toEqual([]);
    const tables = await db.pool.query<{ t: string }>(
      `SELECT table_name AS t FROM information_schema.tables WHERE table_schema = 'together' ORDER BY 1`,
    );
    expect(tables.rows.map((r) => r.t)).toEqual([
      'field_columns',
      'organization_keys',
      'organization_renames',
      'post_custom_segments',
      'post_custom_segments_latest',
      'posts',
      'posts_latest',
      'report_windows',
      'schema_migrations',
      'stage_progress',
      'sync_state',
      'window_reports',
    ]);
  });

  it('quotes the schema and the post id column it substitutes', async () => {
    const target = { schema: 'Odd "Schema"', postIdField: 'Brand_Post_ID' };
    await migrate(db.pool, target, logger);
    const cols = await db.pool.query<{ c: string; t: string }>(
      `SELECT column_name AS c, data_type AS t FROM information_schema.columns
        WHERE table_schema = $1 AND table_name = 'posts' AND ordinal_position = 1`,
      [target.schema],
    );
    expect(cols.rows).toEqual([{ c: 'Brand_Post_ID', t: 'bigint' }]);
  });

  it('refuses a schema made for another post id column', async () => {
    await migrate(db.pool, { schema: 'other_id', postIdField: 'platform_post_id' }, logger);
    await expect(
      migrate(db.pool, { schema: 'other_id', postIdField: 'acme_post_id' }, logger),
    ).rejects.toThrow(/no bigint post id column "acme_post_id"/);
  });

  it('applies new files in order and refuses an applied file that was edited', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'migrations-'));
    await cp('migrations', dir, { recursive: true });
    const target = { schema: 'edited', postIdField: 'platform_post_id' };
    await migrate(db.pool, target, logger, undefined, { migrationsDir: dir });
    await writeFile(join(dir, '900_more.sql'), 'ALTER TABLE {{schema}}.posts ADD COLUMN note text;\n');
    expect((await migrate(db.pool, target, logger, undefined, { migrationsDir: dir })).applied).toEqual([
      '900_more.sql',
    ]);
    await writeFile(join(dir, '900_more.sql'), 'ALTER TABLE {{schema}}.posts ADD COLUMN note2 text;\n');
    const error = await migrate(db.pool, target, logger, undefined, { migrationsDir: dir }).catch(
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(StoreError);
    expect((error as StoreError).code).toBe('SCHEMA_MISMATCH');
    expect((error as StoreError).message).toMatch(/900_more\.sql was edited/);
    // The lock was released: a later run is not blocked.
    await writeFile(join(dir, '900_more.sql'), 'ALTER TABLE {{schema}}.posts ADD COLUMN note text;\n');
    expect((await migrate(db.pool, target, logger, undefined, { migrationsDir: dir })).applied).toEqual([]);
  });

  it('rolls back a failing migration entirely and records nothing', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'migrations-'));
    await cp('migrations', dir, { recursive: true });
    await writeFile(join(dir, '900_bad.sql'), 'CREATE TABLE {{schema}}.half (a int);\nSELECT 1/0;\n');
    const target = { schema: 'failing', postIdField: 'platform_post_id' };
    await expect(migrate(db.pool, target, logger, undefined, { migrationsDir: dir })).rejects.toThrow(
      /migration 900_bad\.sql failed \(22012\)/,
    );
    const half = await db.pool.query(`SELECT to_regclass('failing.half') AS r`);
    expect(half.rows[0]).toEqual({ r: null });
    const done = await db.pool.query<{ name: string }>('SELECT name FROM failing.schema_migrations');
    expect(done.rows.map((r) => r.name)).toEqual(ALL);
  });

  it('moves the loaded windows of a 001 schema into period partitions, rows and added columns intact', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'migrations-'));
    await cp('migrations/001_initial.sql', join(dir, '001_initial.sql'));
    const target = { schema: 'upgraded', postIdField: 'platform_post_id' };
    await migrate(db.pool, target, logger, undefined, { migrationsDir: dir });
    await db.pool.query(`
      ALTER TABLE upgraded.posts ADD COLUMN likes bigint;
      INSERT INTO upgraded.posts (platform_post_id, _window_start, _window_end, _report_id, brand, likes) VALUES
        (9007199254740993, '2026-01-05', '2026-01-11', 'r1', 'Acme', 7),
        (2, '2026-01-05', '2026-01-11', 'r1', NULL, NULL),
        (3, '2026-01-12', '2026-01-18', 'r2', 'Zed', 1);
      INSERT INTO upgraded.post_custom_segments VALUES
        (9007199254740993, '2026-01-05', 'Region', 'North'), (3, '2026-01-12', 'Region', 'South');
      INSERT INTO upgraded.stage_progress (window_start, window_end, report_id, stage_posts, stage_segments)
        VALUES ('2026-01-19', '2026-01-25', 'r3', 'stage_20260119_20260125_posts', 'stage_20260119_20260125_segments');
      CREATE UNLOGGED TABLE upgraded.stage_20260119_20260125_posts (_seq bigint, _id bigint);
    `);
    const before = await db.pool.query(
      'SELECT p.*, s.name, s.value FROM upgraded.posts p LEFT JOIN upgraded.post_custom_segments s USING (platform_post_id, _window_start) ORDER BY 1',
    );
    expect((await migrate(db.pool, target, logger)).applied).toEqual(ALL.slice(1));
    const after = await db.pool.query(
      'SELECT p.*, s.name, s.value FROM upgraded.posts p LEFT JOIN upgraded.post_custom_segments s USING (platform_post_id, _window_start) ORDER BY 1',
    );
    expect(after.rows).toEqual(before.rows.map((row) => ({ ...row, _org: 'default', _extra_fields: null })));
    const parts = await db.pool.query<{ name: string }>(
      `SELECT c.relname AS name FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
        WHERE i.inhparent IN ('upgraded.posts'::regclass, 'upgraded.post_custom_segments'::regclass) ORDER BY 1`,
    );
    expect(parts.rows.map((r) => r.name)).toEqual(['post_custom_segments_y2026', 'posts_y2026']);
    // Row-level security on every partition (migration 010): a broad grant opens none by its name.
    const secured = await db.pool.query<{ name: string; rls: boolean }>(
      `SELECT relname::text AS name, relrowsecurity AS rls FROM pg_class
        WHERE relnamespace = 'upgraded'::regnamespace AND relname IN ('post_custom_segments_y2026', 'posts_y2026')
        ORDER BY 1`,
    );
    expect(secured.rows).toEqual([
      { name: 'post_custom_segments_y2026', rls: true },
      { name: 'posts_y2026', rls: true },
    ]);
    const leftovers = await db.pool.query(
      `SELECT to_regclass('upgraded.stage_20260119_20260125_posts') AS stage, (SELECT count(*)::int FROM upgraded.stage_progress) AS progress`,
    );
    expect(leftovers.rows[0]).toEqual({ stage: null, progress: 0 });
  });

  it("files a 007 schema's state under the default organization, a stage in progress included", async () => {
    const dir = await mkdtemp(join(tmpdir(), 'migrations-'));
    for (const file of ALL.slice(0, 7)) await cp(join('migrations', file), join(dir, file));
    const target = { schema: 'before_orgs', postIdField: 'platform_post_id' };
    await migrate(db.pool, target, logger, undefined, { migrationsDir: dir });
    await db.pool.query(`
      INSERT INTO before_orgs.sync_state (post_id_field, filters, cursor_date) VALUES ('platform_post_id', '{}', '2026-01-11');
      INSERT INTO before_orgs.report_windows (window_start, window_end, filters, report_id, status, row_count)
        VALUES ('2026-01-05', '2026-01-11', '{}', 'r1', 'loaded', 1), ('2026-01-12', '2026-01-18', '{}', NULL, 'staging', NULL);
      INSERT INTO before_orgs.window_reports (window_start, window_end, report_id, received_at, made_at)
        VALUES ('2026-01-05', '2026-01-11', 'r1', now(), now());
      INSERT INTO before_orgs.stage_progress (window_start, window_end, report_id, stage_posts, stage_segments)
        VALUES ('2026-01-12', '2026-01-18', 'r2', 'stage_20260112_20260118_posts', 'stage_20260112_20260118_segments');
      CREATE UNLOGGED TABLE before_orgs.stage_20260112_20260118_posts (_seq bigint, platform_post_id bigint);
      CREATE UNLOGGED TABLE before_orgs.stage_20260112_20260118_segments (_seq bigint, platform_post_id bigint);
    `);
    expect((await migrate(db.pool, target, logger)).applied).toEqual(ALL.slice(7));
    const orgs = await db.pool.query(
      `SELECT (SELECT array_agg(org) FROM before_orgs.sync_state) AS targets,
              (SELECT array_agg(org ORDER BY window_start) FROM before_orgs.report_windows) AS windows,
              (SELECT array_agg(org) FROM before_orgs.window_reports) AS reports,
              (SELECT array_agg(org) FROM before_orgs.stage_progress) AS stages`,
    );
    expect(orgs.rows[0]).toEqual({
      targets: ['default'],
      windows: ['default', 'default'],
      reports: ['default'],
      stages: ['default'],
    });
    // The stage staged before fills _org as a stage made now does.
    await db.pool.query(
      'INSERT INTO before_orgs.stage_20260112_20260118_posts (_seq, platform_post_id) VALUES (0, 1)',
    );
    const staged = await db.pool.query('SELECT _org FROM before_orgs.stage_20260112_20260118_posts');
    expect(staged.rows).toEqual([{ _org: 'default' }]);
    // Its stages have row-level security, as a stage made now has (migration 010).
    const secured = await db.pool.query<{ rls: boolean }>(
      `SELECT relrowsecurity AS rls FROM pg_class WHERE relnamespace = 'before_orgs'::regnamespace
          AND relname IN ('stage_20260112_20260118_posts', 'stage_20260112_20260118_segments')`,
    );
    expect(secured.rows).toEqual([{ rls: true }, { rls: true }]);
    // Every state row names its organization from now on.
    await expect(
      db.pool.query(
        `INSERT INTO before_orgs.report_windows (window_start, window_end, filters) VALUES ('2026-02-02', '2026-02-08', '{}')`,
      ),
    ).rejects.toThrow(/null value in column "org"/);
  });

  it('gives each organization of a 010 schema its id as its key: no partition or stage is renamed', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'migrations-'));
    for (const file of ALL.slice(0, 10)) await cp(join('migrations', file), join(dir, file));
    const target = { schema: 'before_keys', postIdField: 'platform_post_id' };
    await migrate(db.pool, target, logger, undefined, { migrationsDir: dir });
    // acme and o3 have state; hooli (a partition only) is found by its bounds; the default organization names none.
    await db.pool.query(`
      INSERT INTO before_keys.sync_state (org, post_id_field, filters) VALUES
        ('default', 'platform_post_id', '{}'), ('acme', 'platform_post_id', '{}'), ('o3', 'platform_post_id', '{}');
      CREATE TABLE before_keys.posts_y2026 PARTITION OF before_keys.posts
        FOR VALUES FROM ('default', '2026-01-01') TO ('default', '2027-01-01');
      CREATE TABLE before_keys.posts_acme_y2026 PARTITION OF before_keys.posts
        FOR VALUES FROM ('acme', '2026-01-01') TO ('acme', '2027-01-01');
      CREATE TABLE before_keys.posts_hooli_y2026 PARTITION OF before_keys.posts
        FOR VALUES FROM ('hooli', '2026-01-01') TO ('hooli', '2027-01-01');
      INSERT INTO before_keys.stage_progress (org, window_start, window_end, report_id, stage_posts, stage_segments)
        VALUES ('acme', '2026-03-02', '2026-03-08', 'r1', 'stage_acme_20260302_20260308_posts',
                'stage_acme_20260302_20260308_segments');
    `);
    const names = async () =>
      (
        await db.pool.query<{ name: string }>(
          `SELECT relname::text AS name FROM pg_class WHERE relnamespace = 'before_keys'::regnamespace
              AND relkind IN ('r', 'p') ORDER BY 1`,
        )
      ).rows.map((r) => r.name);
    const before = await names();
    expect((await migrate(db.pool, target, logger)).applied).toEqual(ALL.slice(10));
    const keys = await db.pool.query(`SELECT org, key FROM before_keys.organization_keys ORDER BY org`);
    expect(keys.rows).toEqual([
      { org: 'acme', key: 'acme' },
      { org: 'default', key: 'default' },
      { org: 'hooli', key: 'hooli' },
      { org: 'o3', key: 'o3' },
    ]);
    expect((await names()).filter((n) => !n.startsWith('organization_'))).toEqual(before);
    // A new organization's key is past every key taken; one already keyed keeps its own.
    expect(await organizationKey(db.pool, { schema: 'before_keys', org: 'acme-emea' })).toBe('o4');
    expect(await organizationKey(db.pool, { schema: 'before_keys', org: 'acme' })).toBe('acme');
    expect(await organizationKey(db.pool, { schema: 'before_keys', org: 'o4' })).toBe('o5');
  });

  it('keys the segments of an 008 schema, and a keyed stage in progress, by hashes: rows kept, repeats refused', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'migrations-'));
    for (const file of ALL.slice(0, 8)) await cp(join('migrations', file), join(dir, file));
    const target = { schema: 'segment_hashes', postIdField: 'platform_post_id' };
    await migrate(db.pool, target, logger, undefined, { migrationsDir: dir });
    // A value far over the btree's limit for an index row, which the md5 key took: incompressible, so no luck helps it.
    const long = randomBytes(6000).toString('hex');
    await db.pool.query(
      `CREATE TABLE segment_hashes.post_custom_segments_y2026 PARTITION OF segment_hashes.post_custom_segments
         FOR VALUES FROM ('default', '2026-01-01') TO ('default', '2027-01-01');
       INSERT INTO segment_hashes.stage_progress (org, window_start, window_end, report_id, stage_posts, stage_segments)
         VALUES ('default', '2026-03-02', '2026-03-08', 'r1', 'keyed_posts', 'keyed_segments'),
                ('default', '2026-03-09', '2026-03-15', 'r2', 'plain_posts', 'plain_segments');
       CREATE TABLE segment_hashes.keyed_segments (_org text NOT NULL, _window_start date NOT NULL,
         platform_post_id bigint NOT NULL, name text NOT NULL, value text NOT NULL);
       CREATE UNIQUE INDEX keyed_segments_key ON segment_hashes.keyed_segments
         (_org, _window_start, platform_post_id, md5(name), md5(value));
       CREATE TABLE segment_hashes.plain_segments (LIKE segment_hashes.keyed_segments);`,
    );
    await db.pool.query(
      `INSERT INTO segment_hashes.post_custom_segments (_org, _window_start, platform_post_id, name, value)
         VALUES ('default', '2026-01-05', 1, 'Region', 'North'), ('default', '2026-01-05', 1, 'Region', $1)`,
      [long],
    );
    expect((await migrate(db.pool, target, logger)).applied).toEqual(
      ALL.slice(ALL.indexOf('009_segment_key_hash.sql')),
    );
    const keys = await db.pool.query<{ table: string; def: string }>(
      `SELECT x.indrelid::regclass::text AS table, regexp_replace(pg_get_indexdef(x.indexrelid), '^.* USING btree ', '') AS def
         FROM pg_index x JOIN pg_class c ON c.oid = x.indrelid
        WHERE c.relnamespace = 'segment_hashes'::regnamespace AND x.indisunique
          AND c.relname IN ('post_custom_segments', 'post_custom_segments_y2026', 'keyed_segments', 'plain_segments')
        ORDER BY 1`,
    );
    const hashed =
      '(_org, _window_start, platform_post_id, hashtextextended(name, (0)::bigint), hashtextextended(value, (0)::bigint))';
    expect(keys.rows).toEqual([
      { table: 'segment_hashes.keyed_segments', def: hashed },
      { table: 'segment_hashes.post_custom_segments', def: hashed },
      { table: 'segment_hashes.post_custom_segments_y2026', def: hashed },
    ]);
    // The partition's key is attached to the parent's: a stage keyed the same way is attached as a partition.
    const names = await db.pool.query<{ name: string; attached: boolean }>(
      `SELECT x.indexrelid::regclass::text AS name, EXISTS (SELECT 1 FROM pg_inherits h WHERE h.inhrelid = x.indexrelid) AS attached
         FROM pg_index x WHERE x.indrelid = 'segment_hashes.post_custom_segments_y2026'::regclass ORDER BY 1`,
    );
    expect(names.rows.map((r) => r.attached)).toEqual([true, true]);
    const kept = await db.pool.query<{ value: string }>(
      'SELECT value FROM segment_hashes.post_custom_segments ORDER BY length(value)',
    );
    expect(kept.rows.map((r) => r.value)).toEqual(['North', long]);
    await expect(
      db.pool.query(
        `INSERT INTO segment_hashes.post_custom_segments (_org, _window_start, platform_post_id, name, value)
           VALUES ('default', '2026-01-05', 1, 'Region', $1)`,
        [long],
      ),
    ).rejects.toThrow(/duplicate key value violates unique constraint/);
    await db.pool.query(
      `INSERT INTO segment_hashes.post_custom_segments (_org, _window_start, platform_post_id, name, value)
         VALUES ('default', '2026-01-05', 1, 'Region', $1), ('default', '2026-01-05', 2, 'Region', 'North')`,
      [`${long}!`],
    );
  });

  it('moves a history of several years into the one partition of period none', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'migrations-'));
    await cp('migrations/001_initial.sql', join(dir, '001_initial.sql'));
    const target = {
      schema: 'none_years',
      postIdField: 'platform_post_id',
      partitionPeriod: 'none' as const,
    };
    await migrate(db.pool, target, logger, undefined, { migrationsDir: dir });
    await db.pool.query(`
      INSERT INTO none_years.posts (platform_post_id, _window_start, _window_end, _report_id, brand) VALUES
        (1, '2024-12-23', '2024-12-29', 'r1', 'Acme'),
        (2, '2025-12-29', '2026-01-04', 'r2', 'Zed'),
        (3, '2026-01-05', '2026-01-11', 'r3', NULL);
      INSERT INTO none_years.post_custom_segments VALUES
        (1, '2024-12-23', 'Region', 'North'), (3, '2026-01-05', 'Region', 'South');
    `);
    const read = () =>
      db.pool.query(
        'SELECT p.*, s.name, s.value FROM none_years.posts p LEFT JOIN none_years.post_custom_segments s USING (platform_post_id, _window_start) ORDER BY 1',
      );
    const before = await read();
    expect((await migrate(db.pool, target, logger)).applied).toEqual(ALL.slice(1));
    expect((await read()).rows).toEqual(
      before.rows.map((row) => ({ ...row, _org: 'default', _extra_fields: null })),
    );
    const parts = await db.pool.query<{ name: string }>(
      `SELECT c.relname AS name FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
        WHERE i.inhparent IN ('none_years.posts'::regclass, 'none_years.post_custom_segments'::regclass) ORDER BY 1`,
    );
    expect(parts.rows.map((r) => r.name)).toEqual(['post_custom_segments_all', 'posts_all']);
  });

  it('accepts a schema that applied the text of 005 before its fix for period none', async () => {
    const target = { schema: 'applied_005', postIdField: 'platform_post_id' };
    await migrate(db.pool, target, logger);
    await db.pool.query(
      `UPDATE applied_005.schema_migrations SET checksum = $1 WHERE name = '005_period_partitions.sql'`,
      ['0a93cb7d58f0bca04004202e6acd5c39df7e05153875809db3e2772b1e3a814a'],
    );
    expect((await migrate(db.pool, target, logger)).applied).toEqual([]);
  });

  it('splits the loaded report from the attempt in progress in a 002 schema, and dates what was loaded', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'migrations-'));
    await cp('migrations/001_initial.sql', join(dir, '001_initial.sql'));
    await cp('migrations/002_window_partitions.sql', join(dir, '002_window_partitions.sql'));
    const target = { schema: 'attempts', postIdField: 'platform_post_id' };
    await migrate(db.pool, target, logger, undefined, { migrationsDir: dir });
    // As a 002 connector left them: report_id is the latest attempt's, whatever its outcome.
    await db.pool.query(`
      CREATE TABLE attempts.posts_20260105_20260111 PARTITION OF attempts.posts FOR VALUES IN ('2026-01-05');
      CREATE TABLE attempts.posts_20260112_20260118 PARTITION OF attempts.posts FOR VALUES IN ('2026-01-12');
      CREATE TABLE attempts.posts_20260119_20260125 PARTITION OF attempts.posts FOR VALUES IN ('2026-01-19');
      INSERT INTO attempts.posts (platform_post_id, _window_start, _window_end, _report_id, _loaded_at) VALUES
        (1, '2026-01-05', '2026-01-11', 'loaded-a', '2026-01-20T10:00:00Z'),
        (2, '2026-01-12', '2026-01-18', 'loaded-b', '2026-01-20T10:00:00Z'),
        (3, '2026-01-19', '2026-01-25', 'loaded-c', '2026-01-20T10:00:00Z');
      INSERT INTO attempts.report_windows (window_start, window_end, filters, report_id, status, row_count) VALUES
        ('2026-01-05', '2026-01-11', '{}', 'loaded-a', 'loaded', 1),
        ('2026-01-12', '2026-01-18', '{}', 'failed-b', 'failed', 1),
        ('2026-01-19', '2026-01-25', '{}', 'killed-c', 'extracting', 1),
        ('2026-01-26', '2026-02-01', '{}', 'stopped-d', 'pending', NULL),
        ('2026-02-02', '2026-02-08', '{}', 'failed-e', 'failed', NULL);
    `);
    expect((await migrate(db.pool, target, logger)).applied).toEqual(ALL.slice(2));
    const { rows } = await db.pool.query(
      `SELECT window_start::text AS start, report_id, attempt_report_id, loaded_through::text AS through
         FROM attempts.report_windows ORDER BY window_start`,
    );
    expect(rows).toEqual([
      { start: '2026-01-05', report_id: 'loaded-a', attempt_report_id: null, through: '2026-01-11' },
      { start: '2026-01-12', report_id: 'loaded-b', attempt_report_id: null, through: '2026-01-18' },
      // Loaded on 2026-01-20, while its dates were not over: open, final up to the day before.
      { start: '2026-01-19', report_id: 'loaded-c', attempt_report_id: 'killed-c', through: '2026-01-19' },
      { start: '2026-01-26', report_id: null, attempt_report_id: 'stopped-d', through: null },
      { start: '2026-02-02', report_id: null, attempt_report_id: null, through: null },
    ]);
  });
});
