/*
 * Issue 18, field selection, through the built CLI: --exclude-fields / --fields (and their variables) choose the
 * columns; an excluded field's values appear nowhere (a pg_dump of the whole database, or every table's values where no pg_dump fits the server, a stage left by a killed
 * run, the output); the post id and window columns always stay; --fields with --exclude-fields, or an unknown
 * name, is one line and exit 2 with nothing written; another selection on a loaded schema is refused like a
 * filter change unless --reset.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type RunningSimulator, type SimulatorPost, startSimulator } from '../../../src/simulator/server.js';
import { type CliResult, runCli, startCli } from '../../helpers/cli.js';
import { createTestDatabase } from '../../helpers/database.js';
import { databaseText } from '../../helpers/database-text.js';
import { cliEnv } from '../../helpers/e2e-env.js';
import { compareWithReference, snapshotSchema } from '../../helpers/reference-check.js';

const db = await createTestDatabase();
const WEEK = { start: '2026-04-06', end: '2026-04-12' } as const;
const PRIVATE = ['name', 'email'];
let sim: RunningSimulator;

beforeAll(async () => {
  // 150 posts a day: a week is two pages, so that a run can be killed between them.
  sim = await startSimulator({ seed: 18, postsPerDay: 150 });
});
afterAll(async () => {
  await sim.close();
});

const run = (args: string[], schema: string, env: Record<string, string> = {}) =>
  runCli(args, cliEnv(sim, db.url, { POST_REPORTS_SCHEMA: schema, ...env }));
const backfill = ['backfill', '--from', WEEK.start, '--to', WEEK.end];

function reference(): SimulatorPost[] {
  return sim.referencePosts({ start_date: WEEK.start, end_date: WEEK.end });
}

/** The reference without the fields left out. */
function without(posts: readonly SimulatorPost[], fields: readonly string[]): SimulatorPost[] {
  return posts.map((post) => ({
    ...post,
    fields: Object.fromEntries(Object.entries(post.fields).filter(([field]) => !fields.includes(field))),
  }));
}

/** Every value of these fields in the reference (names with accents, quotes and emoji; e-mail addresses). */
function valuesOf(posts: readonly SimulatorPost[], fields: readonly string[]): string[] {
  const values = new Set<string>();
  for (const post of posts) {
    for (const field of fields) {
      const value = post.fields[field];
      if (typeof value === 'string') values.add(value);
    }
  }
  return [...values];
}

/** The whole test database as text: a pg_dump where one for this server exists, every table's values otherwise. */
const dump = (): Promise<string> => databaseText(db.url, db.pool);

async function columns(schema: string): Promise<string[]> {
  const { rows } = await db.pool.query<{ c: string }>(
    `SELECT column_name AS c FROM information_schema.columns WHERE table_schema = $1 AND table_name = 'posts'
      ORDER BY ordinal_position`,
    [schema],
  );
  return rows.map((r) => r.c);
}

function errorLines(result: CliResult): string[] {
  return result.stderr.split('\n').filter((line) => line.startsWith('post-reports-etl:'));
}

async function statusFields(schema: string): Promise<unknown> {
  const status = await runCli(['status', '--json'], { DATABASE_URL: db.url, POST_REPORTS_SCHEMA: schema });
  expect(status.code, status.stderr).toBe(0);
  return (JSON.parse(status.stdout) as { fields: unknown }).fields;
}

describe('field selection (the built CLI)', () => {
  it("--exclude-fields: the values are written nowhere, a killed run's stage included", async () => {
    const schema = 'private';
    const secrets = valuesOf(reference(), PRIVATE);
    expect(secrets.length).toBeGreaterThan(10);
    expect(secrets.some((s) => s.includes('@example.com'))).toBe(true);

    // Killed once its first page is staged, while the simulator holds every later page: the stage it leaves is
    // in the dump too.
    const gate = sim.holdAnswers('page', 1);
    const env = cliEnv(sim, db.url, { POST_REPORTS_SCHEMA: schema, LOG_LEVEL: 'debug' });
    const killed = startCli([...backfill, '--exclude-fields', PRIVATE.join(',')], env);
    await killed.waitForOutput('"msg":"page staged"');
    await gate.held;
    killed.child.kill('SIGKILL');
    const killedResult = await killed.done;
    gate.release();
    const stages = await db.pool.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM ${schema}.stage_progress WHERE pages_staged > 0`,
    );
    expect(stages.rows[0]?.n).toBe(1);
    const staged = await dump();
    expect(staged).toContain('stage_20260406_20260412_posts');
    for (const secret of secrets) expect(staged).not.toContain(secret);

    const resumed = await run([...backfill, '--exclude-fields', PRIVATE.join(',')], schema, {
      LOG_LEVEL: 'debug',
    });
    expect(resumed.code, resumed.stderr).toBe(0);
    const check = await compareWithReference(db.pool, schema, without(reference(), PRIVATE));
    expect(check.problems).toEqual([]);
    expect(check.posts).toBe(reference().length);
    const cols = await columns(schema);
    expect(cols).not.toContain('name');
    expect(cols).not.toContain('email');
    expect(cols.slice(0, 5)).toEqual([
      'platform_post_id',
      '_window_start',
      '_window_end',
      '_report_id',
      '_loaded_at',
    ]);

    const loaded = await dump();
    // The text holds the rows: every post id is in it (a dump that missed the tables would prove nothing).
    for (const post of reference()) expect(loaded).toContain(post.id);
    const output = killedResult.stdout + killedResult.stderr + resumed.stdout + resumed.stderr;
    for (const secret of secrets) {
      expect(loaded).not.toContain(secret);
      expect(output).not.toContain(secret);
    }
    expect(await statusFields(schema)).toEqual({ mode: 'exclude', fields: ['email', 'name'] });
  });

  it('--fields (or POST_REPORTS_FIELDS): only those, with the post id and window columns', async () => {
    const schema = 'chosen';
    const result = await run(backfill, schema, { POST_REPORTS_FIELDS: 'total_spend, brand,currency' });
    expect(result.code, result.stderr).toBe(0);
    expect(await columns(schema)).toEqual([
      'platform_post_id',
      '_window_start',
      '_window_end',
      '_report_id',
      '_loaded_at',
      'brand',
      // Added by migrations 005 and 010, after the columns of 001: fields past the column budget go in
      // _extra_fields, whatever the selection.
      '_org',
      '_extra_fields',
      'total_spend',
      'currency',
    ]);
    const kept = ['brand', 'total_spend', 'currency'];
    const expected = reference().map((post) => ({
      ...post,
      fields: Object.fromEntries(Object.entries(post.fields).filter(([field]) => kept.includes(field))),
      segments: [],
    }));
    const check = await compareWithReference(db.pool, schema, expected);
    expect(check.problems).toEqual([]);
    expect(await statusFields(schema)).toEqual({
      mode: 'include',
      fields: ['brand', 'currency', 'total_spend'],
    });
    // The same selection spelled another way is the same selection.
    const again = await run([...backfill, '--reload', '--fields', 'currency,brand,total_spend'], schema);
    expect(again.code, again.stderr).toBe(0);
  });

  it('refuses --fields with --exclude-fields, and unknown names, in one line and before writing anything', async () => {
    const schema = 'refused';
    const cases: [string[], Record<string, string>, RegExp][] = [
      [
        ['--fields', 'brand', '--exclude-fields', 'email'],
        {},
        /^post-reports-etl: error: POST_REPORTS_FIELDS \(--fields\) and POST_REPORTS_EXCLUDE_FIELDS \(--exclude-fields\) cannot be used together/,
      ],
      [
        ['--exclude-fields', 'email'],
        { POST_REPORTS_FIELDS: 'brand' },
        /^post-reports-etl: error: POST_REPORTS_FIELDS \(--fields\) and POST_REPORTS_EXCLUDE_FIELDS \(--exclude-fields\) cannot be used together/,
      ],
      [
        ['--exclude-fields', 'emial'],
        {},
        /^post-reports-etl: error: POST_REPORTS_EXCLUDE_FIELDS \(--exclude-fields\) names an unknown field "emial": neither documented nor sent by the API/,
      ],
      [
        [],
        { POST_REPORTS_FIELDS: 'brand,totl_spend' },
        /^post-reports-etl: error: POST_REPORTS_FIELDS \(--fields\) names an unknown field "totl_spend"/,
      ],
      [
        ['--exclude-fields', 'platform_post_id'],
        {},
        /^post-reports-etl: error: POST_REPORTS_EXCLUDE_FIELDS \(--exclude-fields\) names the post id field "platform_post_id": it is always loaded$/,
      ],
    ];
    for (const [args, env, says] of cases) {
      const result = await run([...backfill, ...args], schema, env);
      expect(result.code, result.stderr).toBe(2);
      expect(errorLines(result)).toHaveLength(1);
      expect(errorLines(result)[0]).toMatch(says);
      expect(await snapshotSchema(db.pool, schema)).toBe('(no schema)');
    }
  });

  it('refuses another selection on a loaded schema unless --reset, which drops the columns left out', async () => {
    const schema = 'changed';
    const first = await run(backfill, schema);
    expect(first.code, first.stderr).toBe(0);
    expect(await columns(schema)).toContain('email');
    expect(await statusFields(schema)).toEqual({ mode: 'all' });

    const before = await snapshotSchema(db.pool, schema);
    const refused = await run(backfill, schema, { POST_REPORTS_EXCLUDE_FIELDS: 'email,name' });
    expect(refused.code).toBe(2);
    expect(errorLines(refused)).toEqual([
      'post-reports-etl: error: schema "changed" was loaded with all fields, this run has all fields but "email", "name": pass --reset to clear it, or use another schema',
    ]);
    expect(await snapshotSchema(db.pool, schema)).toBe(before);

    const reset = await run([...backfill, '--reset', '--yes'], schema, {
      POST_REPORTS_EXCLUDE_FIELDS: 'email,name',
    });
    expect(reset.code, reset.stderr).toBe(0);
    const cols = await columns(schema);
    expect(cols).not.toContain('email');
    expect(cols).not.toContain('name');
    const check = await compareWithReference(db.pool, schema, without(reference(), PRIVATE));
    expect(check.problems).toEqual([]);
    const dumped = await dump();
    const emails = valuesOf(reference(), ['email']);
    for (const email of emails) expect(dumped).not.toContain(email);

    // Back to every field: refused again without --reset.
    const back = await run(backfill, schema);
    expect(back.code).toBe(2);
    expect(errorLines(back)[0]).toMatch(
      /was loaded with all fields but "email", "name", this run has all fields: pass --reset/,
    );
  });
});
