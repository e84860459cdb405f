import { chmodSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { SimulatorPost } from '../../src/simulator/server.js';
import { type RunningSimulator, startSimulator } from '../../src/simulator/server.js';
import { runCli, startCli } from '../helpers/cli.js';
import { createTestDatabase } from '../helpers/database.js';
import { cliEnv } from '../helpers/e2e-env.js';
import { freePort } from '../helpers/free-port.js';
import { compareWithReference } from '../helpers/reference-check.js';
import { runOnTerminal } from '../helpers/terminal.js';

const db = await createTestDatabase();
const dir = mkdtempSync(join(tmpdir(), 'organizations-file-'));
/** Two APIs: two organizations behind each, and a fifth whose token the second rejects. */
let east: RunningSimulator;
let west: RunningSimulator;

const FROM = '2026-05-04';
const TO = '2026-05-31';

interface Org {
  readonly org: string;
  readonly token: string;
  readonly api: () => RunningSimulator;
  /** Its entry's settings besides its API and token. */
  readonly settings: Record<string, unknown>;
  readonly keep: (field: string) => boolean;
  readonly markets?: readonly string[];
}

const ORGS: readonly Org[] = [
  {
    org: 'acme',
    token: 'token-acme',
    api: () => east,
    settings: { POST_REPORTS_WINDOW_DAYS: 14 },
    keep: () => true,
  },
  {
    org: 'globex',
    token: 'token-globex',
    api: () => east,
    settings: { POST_REPORTS_MARKETS: ['US', 'JP'] },
    keep: () => true,
    markets: ['US', 'JP'],
  },
  {
    org: 'initech',
    token: 'token-initech',
    api: () => west,
    settings: { POST_REPORTS_FIELDS: ['brand', 'total_spend'] },
    keep: (field) => ['brand', 'total_spend'].includes(field),
  },
  {
    org: 'umbrella',
    token: 'token-umbrella',
    api: () => west,
    settings: { POST_REPORTS_EXCLUDE_FIELDS: 'name,email' },
    keep: (field) => !['name', 'email'].includes(field),
  },
];
/** Its token is none the API knows: refused (401) on its first request. */
const REJECTED = 'hooli';

beforeAll(async () => {
  east = await startSimulator({
    seed: 11,
    organizations: [
      { token: 'token-acme', seed: 3, postsPerDay: 12 },
      { token: 'token-globex', seed: 100, postsPerDay: 12 },
    ],
  });
  west = await startSimulator({
    seed: 12,
    organizations: [
      { token: 'token-initech', seed: 5, postsPerDay: 20 },
      { token: 'token-umbrella', seed: 7, postsPerDay: 8 },
    ],
  });
});
afterAll(async () => {
  await east.close();
  await west.close();
  rmSync(dir, { recursive: true, force: true });
});

/** A file of its own, readable by its owner alone, as a mounted secret is. */
function privateFile(name: string, text: string): string {
  const path = join(dir, name);
  writeFileSync(path, text);
  chmodSync(path, 0o600);
  return path;
}

/** The organizations file: each organization's API, token (in a file of its own) and settings. */
function organizationsFile(name: string, orgs: readonly Org[], rejected: boolean): string {
  const entries: Record<string, Record<string, unknown>> = {};
  for (const o of orgs) {
    entries[o.org] = {
      POST_REPORTS_BASE_URL: o.api().baseUrl,
      POST_REPORTS_TOKEN_FILE: privateFile(`${o.org}.token`, `${o.token}\n`),
      ...o.settings,
    };
  }
  if (rejected) {
    entries[REJECTED] = {
      POST_REPORTS_BASE_URL: west.baseUrl,
      POST_REPORTS_TOKEN: 'token-nobody-issued',
    };
  }
  return privateFile(name, JSON.stringify(entries));
}

/** The run's own settings: the first API and a token of it, which every entry replaces. */
function env(schema: string, extra: Record<string, string> = {}): Record<string, string> {
  return cliEnv(east, db.url, {
    POST_REPORTS_TOKEN: 'token-acme',
    POST_REPORTS_SCHEMA: schema,
    POST_REPORTS_CONCURRENCY: '4',
    POST_REPORTS_LOCK_WAIT_MS: '60000',
    ...extra,
  });
}

/** The organization's truth: its reference posts, with only the fields its selection keeps. */
function truth(o: Org): SimulatorPost[] {
  const markets = o.markets === undefined ? {} : { markets: [...o.markets] };
  const posts = o.api().referencePosts({ start_date: FROM, end_date: TO, ...markets }, o.token);
  return posts.map((post) => ({
    ...post,
    fields: Object.fromEntries(Object.entries(post.fields).filter(([field]) => o.keep(field))),
    segments: o.keep('custom_segments') ? post.segments : [],
  }));
}

async function exact(schema: string, o: Org): Promise<string[]> {
  return (await compareWithReference(db.pool, schema, truth(o), 'platform_post_id', o.org)).problems;
}

interface OrganizationLine {
  readonly organization: string;
  readonly status: string;
  readonly exitCode: number;
  readonly posts: number;
  readonly windows: { readonly planned: number; readonly loaded: number; readonly interrupted: number };
  readonly error?: { readonly code: string; readonly message: string };
}

function organizationsOf(summary: Record<string, unknown> | undefined): OrganizationLine[] {
  return (summary?.organizations ?? []) as OrganizationLine[];
}

describe('backfill --organizations FILE', () => {
  it('loads four organizations of two APIs exact in one run and reports the fifth, its token rejected', async () => {
    const file = organizationsFile('five.json', ORGS, true);
    const run = await runCli(['backfill', '--from', FROM, '--to', TO, '--organizations', file], env('five'));
    // The most serious of the organizations' ends: the rejected token needs a person (2), the others exit 0.
    expect(run.code, run.stderr.slice(-3000)).toBe(2);
    const lines = organizationsOf(run.summary);
    expect(lines.map((l) => l.organization)).toEqual([...ORGS.map((o) => o.org), REJECTED]);
    for (const o of ORGS) {
      const line = lines.find((l) => l.organization === o.org)!;
      expect(line, o.org).toMatchObject({ status: 'succeeded', exitCode: 0 });
      expect(line.posts, o.org).toBe(truth(o).length);
      expect(await exact('five', o), o.org).toEqual([]);
    }
    expect(lines.find((l) => l.organization === REJECTED)).toMatchObject({
      status: 'invalid',
      exitCode: 2,
      error: { code: 'TOKEN_REJECTED' },
    });
    expect(run.summary).toMatchObject({ command: 'backfill', status: 'invalid', exitCode: 2 });
    expect(run.stderr).toMatch(/post-reports-etl: error: organization hooli: TOKEN_REJECTED: /);
    // Off a terminal, each organization's progress lines name it.
    const progress = run.stderr
      .split('\n')
      .filter((line) => line.includes('"msg":"progress"'))
      .map((line) => (JSON.parse(line) as { organization?: string }).organization);
    expect(new Set(progress)).toEqual(new Set(ORGS.map((o) => o.org)));
    // Nothing of the rejected organization was written, and no token shows anywhere.
    const { rows } = await db.pool.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM five.posts WHERE _org = $1`,
      [REJECTED],
    );
    expect(rows[0]!.n).toBe(0);
    for (const token of [...ORGS.map((o) => o.token), 'token-nobody-issued']) {
      expect(run.stdout + run.stderr).not.toContain(token);
    }

    // status and plan read each organization of the file: a JSON array.
    const status = await runCli(['status', '--organizations', file], env('five'));
    expect(status.code, status.stderr).toBe(0);
    const statuses = JSON.parse(status.stdout) as { organization: string; posts: number }[];
    expect(statuses.map((s) => [s.organization, s.posts])).toEqual([
      ...ORGS.map((o) => [o.org, truth(o).length]),
      [REJECTED, 0],
    ]);
    const calendar = await runCli(['status', '--calendar', '--organizations', file], env('five'));
    expect(calendar.code, calendar.stderr).toBe(0);
    for (const id of [...ORGS.map((o) => o.org), REJECTED]) {
      expect(calendar.stdout).toContain(`organization ${id} of schema five`);
    }
    const plan = await runCli(['plan', '--from', FROM, '--to', TO, '--organizations', file], env('five'));
    expect(plan.code, plan.stderr).toBe(0);
    const plans = JSON.parse(plan.stdout) as { organization: string; windows: { load: boolean }[] }[];
    expect(plans.map((p) => [p.organization, p.windows.length, p.windows.some((w) => w.load)])).toEqual([
      // acme's windows are 14 days long, its own setting: three of its grid cover the four weeks.
      ['acme', 3, false],
      ['globex', 4, false],
      ['initech', 4, false],
      ['umbrella', 4, false],
      [REJECTED, 4, true],
    ]);
  });

  it('stopped by SIGTERM, resumes every organization on the next run', async () => {
    const file = organizationsFile('four.json', ORGS, false);
    const args = ['backfill', '--from', '2026-03-02', '--to', TO, '--organizations', file];
    for (const sim of [east, west]) sim.setFaults({ latencyMs: 40 });
    const first = startCli(args, env('stopped'));
    await first.waitForOutput('"msg":"windows committed"');
    first.child.kill('SIGTERM');
    const stopped = await first.done;
    for (const sim of [east, west]) sim.setFaults({ latencyMs: 0 });
    expect(stopped.code, stopped.stderr.slice(-3000)).toBe(130);
    const before = organizationsOf(stopped.summary);
    expect(before.map((l) => l.organization)).toEqual(ORGS.map((o) => o.org));
    // The organizations were stopped side by side, with windows left to load (one may have ended first).
    const interrupted = before.filter((l) => l.status === 'interrupted').map((l) => l.organization);
    expect(interrupted.length, JSON.stringify(before)).toBeGreaterThanOrEqual(2);

    const second = await runCli(args, env('stopped'));
    expect(second.code, second.stderr.slice(-3000)).toBe(0);
    for (const line of organizationsOf(second.summary)) {
      expect(line.status, line.organization).toBe('succeeded');
      if (interrupted.includes(line.organization)) {
        expect(line.windows.loaded, line.organization).toBeGreaterThan(0);
      }
    }
    const all = (o: Org): SimulatorPost[] =>
      o
        .api()
        .referencePosts(
          { start_date: '2026-03-02', end_date: TO, ...(o.markets ? { markets: [...o.markets] } : {}) },
          o.token,
        )
        .map((post) => ({
          ...post,
          fields: Object.fromEntries(Object.entries(post.fields).filter(([field]) => o.keep(field))),
          segments: o.keep('custom_segments') ? post.segments : [],
        }));
    for (const o of ORGS) {
      const check = await compareWithReference(db.pool, 'stopped', all(o), 'platform_post_id', o.org);
      expect(check.problems, o.org).toEqual([]);
    }
  });

  it('starts an organization whose start the API kept refusing once more when the others are done, and loads it exact', async () => {
    // Its API answers 429 (Retry-After: 0) until it has refused three requests: its start runs out of attempts
    // while the other organization loads, as when an API that caps the requests in flight is busy with the others'.
    const busy = await startSimulator({
      seed: 13,
      organizations: [{ token: 'token-busy', seed: 9, postsPerDay: 10 }],
    });
    try {
      busy.setFaults({ rateLimitShare: 1, retryAfterSeconds: 0 });
      let refused = 0;
      const stop = busy.onServed((kind) => {
        if (kind !== 'rate-limit') return;
        refused += 1;
        if (refused === 3) busy.setFaults({ rateLimitShare: 0 });
      });
      const acme = ORGS[0]!;
      const file = privateFile(
        'busy.json',
        JSON.stringify({
          acme: { POST_REPORTS_BASE_URL: east.baseUrl, POST_REPORTS_TOKEN: acme.token, ...acme.settings },
          'Busy.Brand-EU': {
            POST_REPORTS_BASE_URL: busy.baseUrl,
            POST_REPORTS_TOKEN: 'token-busy',
            POST_REPORTS_MAX_ATTEMPTS: 3,
          },
        }),
      );
      const run = await runCli(
        ['backfill', '--from', FROM, '--to', TO, '--organizations', file],
        env('busy'),
      );
      stop();
      expect(refused).toBe(3);
      expect(run.code, run.stderr.slice(-3000)).toBe(0);
      const [first, second] = organizationsOf(run.summary);
      expect(first).toMatchObject({ organization: 'acme', status: 'succeeded', exitCode: 0 });
      expect(second).toMatchObject({ organization: 'Busy.Brand-EU', status: 'succeeded', exitCode: 0 });
      expect(run.stderr).toContain('organization could not start: started again once the others are done');
      const reference = busy.referencePosts({ start_date: FROM, end_date: TO }, 'token-busy');
      expect(second!.posts).toBe(reference.length);
      const check = await compareWithReference(
        db.pool,
        'busy',
        reference,
        'platform_post_id',
        'Busy.Brand-EU',
      );
      expect(check.problems).toEqual([]);
      expect(await exact('busy', acme)).toEqual([]);
    } finally {
      await busy.close();
    }
  });
});

describe('sync --organizations FILE', () => {
  it('reports the organizations it cannot run (no start date, a bad one, its API down) and loads the others', async () => {
    // Nothing listens there: the API is down.
    const down = `http://127.0.0.1:${await freePort()}/v4`;
    const path = privateFile(
      'sync.json',
      JSON.stringify({
        acme: { POST_REPORTS_TOKEN: 'token-acme', POST_REPORTS_START_DATE: '2026-11-09' },
        globex: { POST_REPORTS_TOKEN: 'token-globex' },
        initech: {
          POST_REPORTS_BASE_URL: west.baseUrl,
          POST_REPORTS_TOKEN: 'token-initech',
          POST_REPORTS_START_DATE: '2026-13-01',
        },
        umbrella: {
          POST_REPORTS_BASE_URL: down,
          POST_REPORTS_TOKEN: 'token-umbrella',
          POST_REPORTS_START_DATE: '2026-11-09',
          POST_REPORTS_MAX_ATTEMPTS: 2,
        },
      }),
    );
    const run = await runCli(['sync', '--organizations', path], env('synced'));
    expect(run.code, run.stderr.slice(-3000)).toBe(2);
    const [acme, globex, initech, umbrella] = organizationsOf(run.summary);
    expect(acme).toMatchObject({ organization: 'acme', status: 'succeeded', exitCode: 0 });
    expect(acme!.posts).toBeGreaterThan(0);
    expect(run.summary).toMatchObject({ command: 'sync', exitCode: 2, posts: acme!.posts });
    expect(globex).toMatchObject({
      organization: 'globex',
      status: 'invalid',
      exitCode: 2,
      error: {
        code: 'CONFIG_INVALID',
        message: expect.stringContaining('the first sync needs a start date'),
      },
    });
    expect(initech).toMatchObject({
      status: 'invalid',
      error: { code: 'CONFIG_INVALID', message: expect.stringContaining('"2026-13-01"') },
    });
    expect(umbrella).toMatchObject({ status: 'failed', exitCode: 1, error: { code: 'API_NETWORK_ERROR' } });
    expect(run.stderr).toMatch(/post-reports-etl: error: organization globex: CONFIG_INVALID: /);
    expect(run.stderr).toMatch(/post-reports-etl: error: organization initech: CONFIG_INVALID: /);
    // A --reset is one organization's: refused with the file, before anything starts.
    const reset = await runCli(['sync', '--organizations', path, '--reset', '--yes'], env('synced'));
    expect(reset.code, reset.stderr).toBe(2);
    expect(reset.stderr).toMatch(
      /^post-reports-etl: error: --reset starts one organization over, not every organization of --organizations: run it with --organization <id>$/m,
    );
    const status = await runCli(['status', '--organizations', path], env('synced'));
    const cursors = (JSON.parse(status.stdout) as { organization: string; cursor: string | null }[]).map(
      (s) => [s.organization, s.cursor],
    );
    expect(cursors).toEqual([
      ['acme', '2026-11-25'],
      ['globex', null],
      ['initech', null],
      ['umbrella', null],
    ]);
  });
});

describe('on a terminal', () => {
  it("shows a bar for each organization, then each one's closing sentence, and each as a section of status", async () => {
    const file = organizationsFile('terminal.json', ORGS.slice(0, 2), true);
    const { LOG_FORMAT: _json, ...terminalEnv } = env('terminal');
    const run = await runOnTerminal(
      ['backfill', '--from', FROM, '--to', TO, '--organizations', file],
      terminalEnv,
    );
    expect(run.code, run.output.slice(-3000)).toBe(2);
    // Each bar is named by its organization, padded to the longest id.
    expect(run.output).toMatch(/ acme {3}\S* \d+\/3 windows \|/);
    expect(run.output).toMatch(/ globex \S* \d+\/4 windows \|/);
    expect(run.output).toMatch(
      /Loaded \d+ posts in 3 windows, 2026-05-04 to 2026-05-31 into schema terminal \(organization acme\)/,
    );
    expect(run.output).toMatch(/Loaded \d+ posts in 4 windows, .* \(organization globex\)/);
    expect(run.output).toMatch(/post-reports-etl: error: organization hooli: TOKEN_REJECTED: /);
    const status = await runOnTerminal(['status', '--organizations', file], terminalEnv);
    expect(status.code, status.output).toBe(0);
    expect(status.output).toMatch(/organization acme of schema terminal: 3 windows loaded, 0 failed/);
    expect(status.output).toMatch(/organization globex of schema terminal: 4 windows loaded, 0 failed/);
    expect(status.output).toMatch(/organization hooli of schema terminal: nothing loaded yet/);
  });
});

describe('a bad organizations file', () => {
  const cases: [string, string, RegExp][] = [
    ['not JSON', '{"acme": ', /is not JSON/],
    ['not an object', '["acme"]', /must be a JSON object mapping each organization id to its settings/],
    [
      'an unknown setting',
      '{"acme": {"POST_REPORTS_BRNDS": ["A"]}}',
      /organization acme: POST_REPORTS_BRNDS is not a setting \(did you mean POST_REPORTS_BRANDS\?\)/,
    ],
    [
      "the whole run's setting in an entry",
      '{"acme": {"POST_REPORTS_CONCURRENCY": 8}}',
      /organization acme: POST_REPORTS_CONCURRENCY is the whole run's setting, not an organization's/,
    ],
    [
      'a database in an entry',
      '{"acme": {"DATABASE_URL": "postgres://elsewhere/db"}}',
      /organization acme: DATABASE_URL is the whole run's setting/,
    ],
    ['a bad organization id', '{"Acme Corp": {}}', /"Acme Corp" is not an organization id/],
  ];
  for (const [what, text, message] of cases) {
    it(`${what}: one line naming the file and the value, exit 2`, async () => {
      const file = privateFile(`bad-${what.replace(/\W+/g, '-')}.json`, text);
      const run = await runCli(['backfill', '--from', FROM, '--to', TO, '--organizations', file], env('bad'));
      expect(run.code, run.stderr).toBe(2);
      const errors = run.stderr.split('\n').filter((line) => line.startsWith('post-reports-etl: error:'));
      expect(errors, run.stderr).toHaveLength(1);
      expect(errors[0]).toContain(file);
      expect(errors[0]).toMatch(message);
    });
  }
});
