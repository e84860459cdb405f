import { setTimeout as sleep } from 'node:timers/promises';
import type pg from 'pg';
import { beforeAll, describe, expect, it } from 'vitest';
import { withTransaction } from '../../../src/load/database.js';
import { Loader } from '../../../src/load/loader.js';
import { migrate } from '../../../src/load/migrate.js';
import { organizationKey } from '../../../src/load/organization-keys.js';
import { renameOrganization, unfinishedRename } from '../../../src/load/organization-rename.js';
import * as queries from '../../../src/load/queries.js';
import { ORGANIZATION_TABLES, type Scope } from '../../../src/load/scope.js';
import {
  dropEmptyPartitions,
  listWindows,
  readTarget,
  resetTarget,
  writeTarget,
} from '../../../src/load/window-state.js';
import { createTestDatabase } from '../../helpers/database.js';
import { lockWait } from '../../helpers/lock-wait.js';
import { captureLogger, load, post, stageAll, target } from './load-fixtures.js';

const db = await createTestDatabase();
const log = captureLogger();
const { schema } = target;
const ACME: Scope = { schema, org: 'acme' };
const GLOBEX: Scope = { schema, org: 'globex' };
const acme = new Loader(db.pool, { ...target, org: 'acme' }, log.logger);
const globex = new Loader(db.pool, { ...target, org: 'globex' }, log.logger);
const byDefault = new Loader(db.pool, target, log.logger);

beforeAll(async () => {
  await migrate(db.pool, target, log.logger);
  for (const scope of [ACME, GLOBEX]) await writeTarget(db.pool, scope, target.postIdField, {});
});

const seg = (name: string, value: string) => ({ name, value });
const WEEK = { start: '2026-02-02', end: '2026-02-08' };

/** An organization's rows (posts and segments) and state rows, as comparable text. */
async function holdings(org: string): Promise<string[]> {
  const rows: string[] = [];
  for (const [table, column] of ORGANIZATION_TABLES) {
    const { rows: found } = await db.pool.query<{ row: string }>(
      `SELECT $1 || ' ' || (to_jsonb(t) - '_loaded_at' - 'updated_at' - 'finished_at' - 'started_at')::text AS row
         FROM ${schema}.${table} t WHERE ${column} = $2 ORDER BY 1`,
      [table, org],
    );
    rows.push(...found.map((r) => r.row));
  }
  return rows;
}

async function partitions(): Promise<string[]> {
  const { rows } = await db.pool.query<{ name: string }>(
    `SELECT c.relname::text AS name FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
      WHERE i.inhparent = '${schema}.posts'::regclass ORDER BY 1`,
  );
  return rows.map((r) => r.name);
}

describe('organizations in one schema', () => {
  it('load the same post ids side by side, each row under its own key, in partitions of their own', async () => {
    await load(acme, WEEK, 'acme-1', [[post(1, { brand: 'Acme' }, [seg('Region', 'North')]), post(2)]]);
    await load(globex, WEEK, 'globex-1', [[post(1, { brand: 'Globex' }, [seg('Region', 'South')])]]);
    await load(byDefault, WEEK, 'default-1', [[post(1, { brand: 'Initech' })]]);
    const { rows } = await db.pool.query<{ org: string; id: string; brand: string | null; report: string }>(
      `SELECT _org AS org, platform_post_id::text AS id, brand, _report_id AS report
         FROM ${schema}.posts ORDER BY 1, 2`,
    );
    expect(rows).toEqual([
      { org: 'acme', id: '1', brand: 'Acme', report: 'acme-1' },
      { org: 'acme', id: '2', brand: null, report: 'acme-1' },
      { org: 'default', id: '1', brand: 'Initech', report: 'default-1' },
      { org: 'globex', id: '1', brand: 'Globex', report: 'globex-1' },
    ]);
    const segments = await db.pool.query(
      `SELECT _org AS org, value FROM ${schema}.post_custom_segments ORDER BY 1`,
    );
    expect(segments.rows).toEqual([
      { org: 'acme', value: 'North' },
      { org: 'globex', value: 'South' },
    ]);
    // Named from the keys the schema gave them in the order they first loaded (the default one's names none).
    expect(await partitions()).toEqual(['posts_o1_y2026', 'posts_o2_y2026', 'posts_y2026']);
    // Each organization's windows are its own.
    for (const [scope, report] of [
      [ACME, 'acme-1'],
      [GLOBEX, 'globex-1'],
    ] as const) {
      expect((await listWindows(db.pool, scope)).map((w) => [w.start, w.reportId, w.rowCount])).toEqual([
        [WEEK.start, report, scope === ACME ? 2 : 1],
      ]);
    }
  });

  it("a reload of one organization's window replaces its rows only", async () => {
    const before = await holdings('globex');
    await load(acme, WEEK, 'acme-2', [[post(2, { brand: 'Acme' })]]);
    const { rows } = await db.pool.query(
      `SELECT _org AS org, platform_post_id::text AS id FROM ${schema}.posts ORDER BY 1, 2`,
    );
    expect(rows).toEqual([
      { org: 'acme', id: '2' },
      { org: 'default', id: '1' },
      { org: 'globex', id: '1' },
    ]);
    expect(await holdings('globex')).toEqual(before);
  });

  it('a reset of one organization removes its rows, partitions, stages and state, and nothing of the others', async () => {
    // A stage in progress of each: the reset drops acme's only.
    const next = { start: '2026-02-09', end: '2026-02-15' };
    await stageAll(acme, next, 'acme-half', [[post(5)]]);
    await stageAll(globex, next, 'globex-half', [[post(6)]]);
    const others = [await holdings('globex'), await holdings('default')];
    const removed = await withTransaction(db.pool, undefined, (client) =>
      resetTarget(client, ACME, target.postIdField, { brands: ['Acme'] }),
    );
    expect(removed).toEqual({ windows: 1, posts: 1 });
    expect([await holdings('globex'), await holdings('default')]).toEqual(others);
    // Emptied by the reset's transaction, dropped after it (as a run does).
    expect(await dropEmptyPartitions(db.pool, ACME)).toEqual({ dropped: 2, kept: 0 });
    expect(await partitions()).toEqual(['posts_o2_y2026', 'posts_y2026']);
    const acmeLeft = await holdings('acme');
    expect(acmeLeft.filter((row) => !row.startsWith('sync_state '))).toEqual([]);
    expect(await readTarget(db.pool, ACME)).toMatchObject({
      filters: { brands: ['Acme'] },
      cursorDate: null,
    });
    const stages = await db.pool.query<{ name: string }>(
      `SELECT tablename::text AS name FROM pg_tables WHERE schemaname = $1 AND tablename ~ '^stage_.*_(posts|segments)$' ORDER BY 1`,
      [schema],
    );
    expect(stages.rows.map((r) => r.name)).toEqual([
      'stage_o2_20260209_20260215_posts',
      'stage_o2_20260209_20260215_segments',
    ]);
    // The organization loads again from nothing, beside the others, under the key it keeps.
    await load(acme, WEEK, 'acme-3', [[post(1, { brand: 'Acme' })]]);
    expect(await partitions()).toEqual(['posts_o1_y2026', 'posts_o2_y2026', 'posts_y2026']);
    expect([await holdings('globex'), await holdings('default')]).toEqual(others);
  });

  it.each([
    [
      'a reset',
      'hooli',
      (pool: pg.Pool) =>
        withTransaction(pool, undefined, (client) =>
          resetTarget(client, { schema, org: 'hooli' }, target.postIdField, {}),
        ),
    ],
    [
      'a rename',
      'tyrell',
      (pool: pg.Pool) => renameOrganization(pool, { schema, org: 'tyrell' }, 'tyrell2', { waitMs: 60_000 }),
    ],
  ])(
    "%s waits for another organization's commit under way, instead of deadlocking with it",
    async (_, org, change) => {
      const scope: Scope = { schema, org };
      await writeTarget(db.pool, scope, target.postIdField, {});
      const loader = new Loader(db.pool, { ...target, org }, log.logger);
      await load(loader, WEEK, `${org}-1`, [[post(1, {}, [seg('Region', 'West')])]]);
      const next = { start: '2026-05-04', end: '2026-05-10' };
      await stageAll(globex, next, `globex-${org}`, [[post(7, {}, [seg('Region', 'East')])]]);
      let changing: Promise<unknown> | undefined;
      let waitedFor: string | undefined;
      await globex.commitWindows([next], undefined, {
        // Inside the commit, holding its lock: the parents locked as its DELETE of posts locks them next.
        verify: async (client) => {
          await client.query(`LOCK TABLE ${schema}.posts IN ROW EXCLUSIVE MODE`);
          changing = change(db.pool);
          waitedFor = (await lockWait(db.pool)).event;
        },
      });
      await changing;
      // On an advisory lock (the commit's), not on the parents: no relation lock of the commit's is held against it.
      expect(waitedFor).toBe('advisory');
      const { rows } = await db.pool.query<{ org: string }>(
        `SELECT DISTINCT _org AS org FROM ${schema}.post_custom_segments WHERE _window_start = $1`,
        [next.start],
      );
      expect(rows).toEqual([{ org: 'globex' }]);
    },
  );

  it.each([
    ['month', ['posts_KEY_m202602', 'posts_KEY_m202605']],
    ['none', ['posts_KEY_all']],
  ] as const)('a rename of partitions by %s keeps their periods under the new key', async (period, names) => {
    const org = `wonka_${period}`;
    await writeTarget(db.pool, { schema, org }, target.postIdField, {});
    const loader = new Loader(db.pool, { ...target, org, partitionPeriod: period }, log.logger);
    await load(loader, WEEK, `${org}-1`, [[post(1, {}, [seg('Region', 'West')])]]);
    await load(loader, { start: '2026-05-04', end: '2026-05-10' }, `${org}-2`, [[post(2)]]);
    const before = await holdings(org);
    const to = `Wonka.${period}`;
    expect(await renameOrganization(db.pool, { schema, org }, to, { waitMs: 60_000 })).toMatchObject({
      posts: 2,
      windows: 2,
    });
    expect(await holdings(org)).toEqual([]);
    const moved = await holdings(to);
    expect(moved.map((row) => row.replaceAll(to, org))).toEqual(before);
    const key = await organizationKey(db.pool, { schema, org: to });
    const { rows } = await db.pool.query<{ name: string }>(
      `SELECT c.relname::text AS name FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
        WHERE i.inhparent = '${schema}.posts'::regclass AND pg_get_expr(c.relpartbound, c.oid) LIKE $1 ORDER BY 1`,
      [`%'${to}'%`],
    );
    expect(rows.map((r) => r.name)).toEqual(names.map((name) => name.replace('KEY', key)));
  });

  it('a rename cut short leaves each window whole under one id or the other, and is finished by running it again', async () => {
    const scope: Scope = { schema, org: 'tyrell3' };
    await writeTarget(db.pool, scope, target.postIdField, {});
    const loader = new Loader(db.pool, { ...target, org: 'tyrell3' }, log.logger);
    const may = { start: '2026-05-04', end: '2026-05-10' };
    await load(loader, WEEK, 'tyrell3-1', [[post(1, {}, [seg('Region', 'West')])]]);
    await load(loader, may, 'tyrell3-2', [[post(2, {}, [seg('Region', 'East')])]]);
    const rows = async () =>
      (
        await db.pool.query<{ row: string }>(
          `SELECT _org || ' ' || _window_start || ' ' || platform_post_id AS row FROM ${schema}.posts
            WHERE _org LIKE 'tyrell3%' OR _org = 'tyrell-3' ORDER BY _window_start`,
        )
      ).rows.map((r) => r.row);
    // May's rows held by another transaction: the rename moves February, then waits there, and its session is cut.
    const blocker = await db.pool.connect();
    try {
      await blocker.query('BEGIN');
      await blocker.query(
        `SELECT 1 FROM ${schema}.posts WHERE _org = 'tyrell3' AND _window_start = $1 FOR UPDATE`,
        [may.start],
      );
      let outcome: string | undefined;
      const renaming = renameOrganization(db.pool, scope, 'tyrell-3', { waitMs: 0 }).then(
        () => 'renamed',
        () => 'cut',
      );
      void renaming.then((result) => {
        outcome = result;
      });
      // Each session of it that waits is cut, the one its retry opens too, until it gives up.
      while (outcome === undefined) {
        await db.pool.query(
          `SELECT pg_terminate_backend(pid) FROM pg_stat_activity
            WHERE datname = current_database() AND wait_event_type = 'Lock' AND pid <> pg_backend_pid()`,
        );
        await Promise.race([renaming, sleep(20)]);
      }
      expect(outcome).toBe('cut');
    } finally {
      await blocker.query('ROLLBACK');
      blocker.release();
    }
    expect(await rows()).toEqual(['tyrell-3 2026-02-02 1', 'tyrell3 2026-05-04 2']);
    expect(await readTarget(db.pool, { schema, org: 'tyrell-3' })).not.toBeNull();
    // Both ids are part of it until it is finished: a run of either must not start (prepare-run refuses it).
    const cut = { from: 'tyrell3', to: 'tyrell-3' };
    expect(await unfinishedRename(db.pool, scope)).toEqual(cut);
    expect(await unfinishedRename(db.pool, { schema, org: 'tyrell-3' })).toEqual(cut);
    // Its record says where it went: run again, it finishes.
    const done = await renameOrganization(db.pool, scope, 'tyrell-3', { waitMs: 60_000 });
    expect(done).toMatchObject({ posts: 1, windows: 2 });
    expect(await rows()).toEqual(['tyrell-3 2026-02-02 1', 'tyrell-3 2026-05-04 2']);
    expect(await unfinishedRename(db.pool, scope)).toBeNull();
    expect(await unfinishedRename(db.pool, { schema, org: 'tyrell-3' })).toBeNull();
    const left = await db.pool.query(
      `SELECT c.relname FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
        WHERE pg_get_expr(c.relpartbound, c.oid) LIKE '%''tyrell3''%'`,
    );
    expect(left.rows).toEqual([]);
  });

  it('gives organizations asking at once a key each, never one twice, and one asking twice the same key', async () => {
    const ids = Array.from({ length: 8 }, (_, i) => `3f2a9c1e-8b7d-4e2f-9a6b-1c2d3e4f5a${i}b`);
    const asked = [...ids, ...ids];
    const keys = await Promise.all(asked.map((org) => organizationKey(db.pool, { schema, org })));
    const byId = new Map<string, Set<string>>();
    for (const [i, org] of asked.entries()) byId.set(org, (byId.get(org) ?? new Set()).add(keys[i]!));
    expect([...byId.values()].map((set) => set.size)).toEqual(ids.map(() => 1));
    const given = await db.pool.query<{ key: string; n: number }>(
      `SELECT key, count(*)::int AS n FROM ${schema}.organization_keys GROUP BY key HAVING count(*) > 1`,
    );
    expect(given.rows).toEqual([]);
    expect(new Set(keys).size).toBe(ids.length);
    // Every key is a short name part: the ids are not.
    expect(keys.every((key) => /^o[0-9]+$/.test(key))).toBe(true);
  });

  it('refuses a row without an organization: none is filed under the default one by accident', async () => {
    await expect(
      db.pool.query(
        `INSERT INTO ${schema}.posts (platform_post_id, _window_start, _window_end, _report_id)
         VALUES (9, '2026-02-02', '2026-02-08', 'x')`,
      ),
      // The organization is the partitions' key: a row without one belongs to no partition.
    ).rejects.toThrow(/no partition of relation "posts" found for row/);
  });

  it("lists an organization's partitions without one another session dropped since the statement's snapshot", async () => {
    // Another organization's reset drops its partitions while a rename lists the schema's: the snapshot's
    // pg_inherits still holds the dropped one, whose bound the catalog no longer finds.
    const cyberdyne = new Loader(db.pool, { ...target, org: 'cyberdyne' }, log.logger);
    const before = new Set(await partitions());
    await load(cyberdyne, WEEK, 'cyberdyne-1', [[post(1, { brand: 'Cyberdyne' })]]);
    const dropped = (await partitions()).find((name) => !before.has(name))!;
    expect(dropped).toBeDefined();
    const reader = await db.pool.connect();
    try {
      await reader.query('BEGIN ISOLATION LEVEL REPEATABLE READ');
      await reader.query('SELECT 1');
      await db.pool.query(`DROP TABLE ${schema}.${dropped}`);
      const { rows } = await reader.query<{ name: string; bound: string | null }>(queries.partitionsOf, [
        `${schema}.posts`,
      ]);
      expect(rows.map((r) => r.name)).toEqual([...before].sort());
      expect(rows.filter((r) => r.bound === null)).toEqual([]);
    } finally {
      await reader.query('ROLLBACK');
      reader.release();
    }
  });
});
