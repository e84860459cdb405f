import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseConfig } from '../../../src/config.js';
import { createLogger } from '../../../src/logger.js';
import { addDays } from '../../../src/model/dates.js';
import { executeRun } from '../../../src/pipeline/run.js';
import { cutWindows } from '../../../src/pipeline/windows.js';
import { type RunningSimulator, startSimulator } from '../../../src/simulator/server.js';
import { runCli } from '../../helpers/cli.js';
import { createTestDatabase } from '../../helpers/database.js';
import { cliEnv } from '../../helpers/e2e-env.js';
import { freePort } from '../../helpers/free-port.js';
import { startPasswordServer } from '../../helpers/password-server.js';
import { snapshotSchema } from '../../helpers/reference-check.js';
import { summaryOf } from '../../helpers/summary.js';
import { runOnTerminal, terminalLines } from '../../helpers/terminal.js';
import { TODAY, testNow } from '../../helpers/today.js';

// What a new user met in their first week (issue #43), each through the built CLI.
const db = await createTestDatabase();
let sim: RunningSimulator;
const FROM = addDays(TODAY, -30);
const TO = addDays(TODAY, -10);
const PROMPT = 'Remove them and start over? [y/N]';

beforeAll(async () => {
  sim = await startSimulator({ seed: 43, postsPerDay: 10, now: testNow() });
});
afterAll(async () => {
  await sim.close();
});

function env(schema: string, extra: Record<string, string> = {}): Record<string, string> {
  return cliEnv(sim, db.url, { POST_REPORTS_SCHEMA: schema, ...extra });
}

async function load(schema: string): Promise<void> {
  const run = await runCli(['backfill', '--from', FROM, '--to', TO], env(schema));
  expect(run.code, run.stderr).toBe(0);
}

describe('--reset removes only when asked (1)', () => {
  it('piped through tee from a terminal: no question, nothing removed without --yes (exit 2)', async () => {
    const schema = 'reset_teed';
    await load(schema);
    const before = await snapshotSchema(db.pool, schema);
    const teed = await runOnTerminal(['backfill', '--from', FROM, '--to', TO, '--reset'], env(schema), {
      throughTee: true,
    });
    expect(teed.code, teed.output).toBe(2);
    expect(teed.output).not.toContain(PROMPT);
    expect(teed.output).toContain(`--reset removes from schema "${schema}"`);
    expect(teed.output).toContain('add --yes to remove them (nothing was removed)');
    expect(await snapshotSchema(db.pool, schema)).toBe(before);
  });

  it('off a terminal: refused without --yes, done with it', async () => {
    const schema = 'reset_scheduled';
    await load(schema);
    const before = await snapshotSchema(db.pool, schema);
    const refused = await runCli(['backfill', '--from', FROM, '--to', TO, '--reset'], env(schema));
    expect(refused.code, refused.stderr).toBe(2);
    expect(refused.summary).toMatchObject({ status: 'invalid', error: { code: 'RESET_DECLINED' } });
    expect(await snapshotSchema(db.pool, schema)).toBe(before);

    const yes = await runCli(['backfill', '--from', FROM, '--to', TO, '--reset', '--yes'], env(schema));
    expect(yes.code, yes.stderr).toBe(0);
    expect(summaryOf(yes).reset?.windows).toBeGreaterThan(0);
  });
});

describe('every POST_REPORTS_ variable is a setting (2)', () => {
  it('a misspelt variable in .env is refused with the name meant; nothing is loaded', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'first-week-'));
    await writeFile(join(dir, '.env'), 'POST_REPORTS_BRAND=Atlas Athletics\n');
    const run = await runCli(['backfill', '--from', FROM, '--to', TO], env('misspelt'), { cwd: dir });
    expect(run.code, run.stderr).toBe(2);
    expect(run.stderr).toContain('POST_REPORTS_BRAND is not a setting (did you mean POST_REPORTS_BRANDS?)');
    const schemas = await db.pool.query("SELECT 1 FROM pg_namespace WHERE nspname = 'misspelt'");
    expect(schemas.rowCount).toBe(0);
  });

  it('in the environment too; one near no setting is a warning (a later version may know it)', async () => {
    const typo = await runCli(
      ['plan', '--from', FROM, '--to', TO],
      env('misspelt', { POST_REPORTS_SHEMA: 'x' }),
    );
    expect(typo.code, typo.stderr).toBe(2);
    expect(typo.stderr).toContain('POST_REPORTS_SHEMA is not a setting (did you mean POST_REPORTS_SCHEMA?)');
    const later = await runCli(
      ['plan', '--from', FROM, '--to', TO],
      env('misspelt', { POST_REPORTS_SOMETHING_QUITE_NEW: '1' }),
    );
    expect(later.code, later.stderr).toBe(0);
    expect(later.stderr).toContain('POST_REPORTS_SOMETHING_QUITE_NEW is not a setting of this version');
  });
});

describe('a --to after today (3)', () => {
  it('is cut at today with a warning, and the next sync runs', async () => {
    const schema = 'future_to';
    const start = addDays(TODAY, -20);
    const first = await runCli(['sync', '--start-date', start], env(schema));
    expect(first.code, first.stderr).toBe(0);
    const future = addDays(TODAY, 5);
    const backfill = await runCli(['backfill', '--from', start, '--to', future], env(schema));
    expect(backfill.code, backfill.stderr).toBe(0);
    expect(backfill.stderr).toContain(
      `--to ${future} is after today (${TODAY}, UTC): loading up to ${TODAY}`,
    );
    expect(summaryOf(backfill).to).toBe(TODAY);
    const after = await db.pool.query(
      `SELECT count(*)::int AS n FROM ${schema}.report_windows WHERE window_start > $1 OR window_end > $1`,
      [TODAY],
    );
    expect(after.rows[0].n).toBe(0);
    const sync = await runCli(['sync'], env(schema));
    expect(sync.code, sync.stderr).toBe(0);
  });

  it('a schema an earlier version loaded past today is mended by the next sync', async () => {
    const schema = 'future_poisoned';
    const start = addDays(TODAY, -20);
    const first = await runCli(['sync', '--start-date', start], env(schema));
    expect(first.code, first.stderr).toBe(0);
    // As an earlier version's backfill did with a --to after today: windows cut up to it, loaded as open.
    const config = parseConfig(env(schema));
    const future = addDays(TODAY, 5);
    const poisoned = await executeRun(
      { config, logger: createLogger({ level: 'silent' }) },
      {
        command: 'backfill',
        resolve: () => ({ from: start, to: future, windows: cutWindows(start, future, 7), reload: false }),
        reset: false,
        moveCursor: false,
        today: TODAY,
      },
    );
    expect(poisoned.exitCode).toBe(0);
    const sync = await runCli(['sync'], env(schema));
    expect(sync.code, sync.stderr).toBe(0);
    expect(summaryOf(sync).windows.failed).toBe(0);
  });

  it('a --from after today too is refused', async () => {
    const run = await runCli(
      ['backfill', '--from', addDays(TODAY, 1), '--to', addDays(TODAY, 3)],
      env('future_from'),
    );
    expect(run.code, run.stderr).toBe(2);
    expect(run.stderr).toContain(`--from ${addDays(TODAY, 1)} is after today (${TODAY}, UTC)`);
  });
});

describe('status follows the terminal and pipe rule, and says what it finds (5)', () => {
  it('piped: JSON, as --json; on a terminal: text', async () => {
    const schema = 'status_piped';
    await load(schema);
    const piped = await runCli(['status'], env(schema));
    expect(piped.code, piped.stderr).toBe(0);
    expect(piped.summary).toMatchObject({ schema, organization: 'default', windows: { loaded: 3 } });
    const text = await runOnTerminal(['status'], env(schema));
    expect(text.code, text.output).toBe(0);
    expect(terminalLines(text.output)[0]).toMatch(/^schema status_piped: 3 windows loaded, 0 failed/);
  });

  it('a schema not made yet: nothing loaded yet, exit 0', async () => {
    const text = await runOnTerminal(['status'], env('not_made'));
    expect(text.code, text.output).toBe(0);
    expect(terminalLines(text.output)[0]).toContain('schema not_made: nothing loaded yet');
  });

  it('an organization the schema does not hold: exit 2, naming those it holds', async () => {
    const schema = 'status_orgs';
    const run = await runCli(
      ['backfill', '--from', FROM, '--to', TO],
      env(schema, { POST_REPORTS_ORGANIZATION: 'acme' }),
    );
    expect(run.code, run.stderr).toBe(0);
    const unknown = await runCli(['status', '--organization', 'globex'], env(schema));
    expect(unknown.code, unknown.stderr).toBe(2);
    expect(unknown.stderr).toContain(
      'organization "globex" has nothing in schema "status_orgs", which holds acme: check POST_REPORTS_ORGANIZATION (--organization)',
    );
    expect(unknown.summary).toMatchObject({ command: 'status', exitCode: 2 });
  });
});

describe('connection problems say what to do (6)', () => {
  it('a server asking for a password the URL does not give: one line naming where to put it, exit 2', async () => {
    const server = await startPasswordServer({ scram: true });
    try {
      const url = `postgres://someone@127.0.0.1:${server.port}/x`;
      for (const args of [['status'], ['backfill', '--from', FROM, '--to', TO]]) {
        const run = await runCli(args, env('no_password', { DATABASE_URL: url }));
        expect(run.code, run.stderr).toBe(2);
        expect(run.stderr).toContain('asks for a password and none was given');
        expect(run.stderr).toContain('PGPASSWORD');
        expect(run.stderr).not.toContain('SASL');
      }
    } finally {
      server.close();
    }
  });

  it('an unencoded # in the password: refused before connecting, the password not shown, exit 2', async () => {
    const run = await runCli(
      ['status'],
      env('misread', { DATABASE_URL: 'postgres://me:p@ss#w0rdXyz@127.0.0.1:5432/x' }),
    );
    expect(run.code, run.stderr).toBe(2);
    expect(run.stderr).toContain('must be percent-encoded (%40, %23, %2F, %3F)');
    expect(run.stderr).not.toContain('ENOTFOUND');
    expect(run.stderr).not.toContain('w0rdXyz');
  });

  it('an API host that does not resolve (exit 2) or refuses (exit 1): the setting named, what to check', async () => {
    const quick = { POST_REPORTS_MAX_ATTEMPTS: '2', POST_REPORTS_RETRY_MIN_DELAY_MS: '1' };
    const unknown = await runCli(
      ['dimensions'],
      env('api', { ...quick, POST_REPORTS_BASE_URL: 'https://no-such-host.invalid/v4' }),
    );
    expect(unknown.code, unknown.stderr).toBe(2);
    expect(unknown.stderr).toMatch(
      /cannot reach the API: its host "no-such-host.invalid" does not resolve \(E[A-Z_]+\): check the host name in POST_REPORTS_BASE_URL \(--base-url\)/,
    );
    const port = await freePort();
    const refused = await runCli(
      ['dimensions'],
      env('api', { ...quick, POST_REPORTS_BASE_URL: `http://127.0.0.1:${port}/v4` }),
    );
    expect(refused.code, refused.stderr).toBe(1);
    expect(refused.stderr).toContain(
      `cannot reach the API: 127.0.0.1:${port} refused the connection (ECONNREFUSED): check the port in POST_REPORTS_BASE_URL (--base-url)`,
    );
  });
});

describe('where a run wrote, and every setting in force (4)', () => {
  it('the summary line and the closing sentence name the database, schema and organization', async () => {
    const where = new URL(db.url);
    const database = `${where.hostname}:${where.port}${where.pathname}`;
    const piped = await runCli(
      ['backfill', '--from', FROM, '--to', TO],
      env('where_wrote', { POST_REPORTS_ORGANIZATION: 'acme' }),
    );
    expect(piped.code, piped.stderr).toBe(0);
    expect(piped.summary).toMatchObject({ database, schema: 'where_wrote', organization: 'acme' });
    expect(piped.stderr).toContain(`loading into schema where_wrote (organization acme) of ${database}`);
    const shown = await runOnTerminal(['backfill', '--from', FROM, '--to', TO, '--reload'], {
      ...env('where_wrote', { POST_REPORTS_ORGANIZATION: 'acme' }),
      LOG_FORMAT: 'auto',
    });
    expect(shown.code, shown.output).toBe(0);
    expect(terminalLines(shown.output).join('\n')).toMatch(
      new RegExp(
        `Loaded \\d+ posts in 3 windows, ${FROM} to ${TO} into schema where_wrote \\(organization acme\\) of ${database.replaceAll('.', '\\.')}, in`,
      ),
    );
  });

  it('config: each setting, its value with secrets hidden, its source; then the checks, exit 0 or 2', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'first-week-config-'));
    await writeFile(join(dir, '.env'), 'POST_REPORTS_BRANDS=Atlas Athletics\n');
    await writeFile(join(dir, 'settings.json'), JSON.stringify({ POST_REPORTS_WINDOW_DAYS: 14 }));
    const url = new URL(db.url);
    // A password to be hidden: the server's own where it asks for one (the embedded server), else one trust ignores.
    if (url.password === '') url.password = 'S3cretPw';
    const password = decodeURIComponent(url.password);
    const base = env('config_shown', {
      DATABASE_URL: url.toString(),
      POST_REPORTS_CONFIG: join(dir, 'settings.json'),
    });
    const run = await runCli(['config', '--concurrency', '2'], base, { cwd: dir });
    expect(run.code, run.stdout + run.stderr).toBe(0);
    expect(run.stdout).not.toContain(password);
    expect(run.stdout).not.toContain(sim.token);
    const report = run.summary as {
      settings: { env: string; value: string | null; source: string | null }[];
      checks: { check: string; ok: boolean | null }[];
    };
    const setting = (name: string) => report.settings.find((s) => s.env === name);
    expect(setting('POST_REPORTS_CONCURRENCY')).toMatchObject({ value: '2', source: 'flag' });
    expect(setting('POST_REPORTS_SCHEMA')).toMatchObject({ value: 'config_shown', source: 'environment' });
    expect(setting('POST_REPORTS_BRANDS')).toMatchObject({ value: 'Atlas Athletics', source: '.env' });
    expect(setting('POST_REPORTS_WINDOW_DAYS')).toMatchObject({ value: '14', source: 'config file' });
    expect(setting('POST_REPORTS_LOOKBACK_DAYS')).toMatchObject({ value: '3', source: 'default' });
    expect(setting('POST_REPORTS_TOKEN')).toMatchObject({ value: '(set, hidden)', source: 'environment' });
    expect(setting('DATABASE_URL')?.value).toContain(':***@');
    expect(report.checks.map((c) => [c.check, c.ok])).toEqual([
      ['configuration', true],
      ['api', true],
      ['token', true],
      ['database', true],
      ['privileges', true],
      ['pooler', true],
    ]);

    const rejected = await runOnTerminal(['doctor'], { ...base, POST_REPORTS_TOKEN: 'not-the-token' });
    expect(rejected.code, rejected.output).toBe(2);
    const lines = terminalLines(rejected.output);
    expect(lines.find((l) => l.includes('FAIL'))).toMatch(/^FAIL {2}token {9}.*rejected the token/);
    expect(lines.find((l) => /^ok {4}database {6}/.test(l))).toBeDefined();
  });
});

describe('plan says what it would replace (8)', () => {
  it('a range that cuts a loaded week: the week named as replaced with its rows, its other dates as outside the range', async () => {
    const schema = 'plan_off_grid';
    const loaded = await runCli(['backfill', '--from', '2026-11-02', '--to', '2026-11-08'], env(schema));
    expect(loaded.code, loaded.stderr).toBe(0);
    const rows = summaryOf(loaded).posts;
    const plan = await runCli(['plan', '--from', '2026-10-01', '--to', '2026-11-05'], env(schema));
    expect(plan.code, plan.stderr).toBe(0);
    const windows = plan.stdout
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as Record<string, unknown>);
    const week = { start: '2026-11-02', end: '2026-11-08', rows };
    expect(windows.find((w) => w.start === '2026-11-02')).toMatchObject({
      end: '2026-11-05',
      load: true,
      replaces: [week],
      outsideRange: false,
    });
    expect(windows.find((w) => w.start === '2026-11-06')).toMatchObject({
      end: '2026-11-08',
      replaces: [week],
      outsideRange: true,
    });
    expect(windows.filter((w) => w.outsideRange === true)).toHaveLength(1);
    const text = terminalLines(
      (await runOnTerminal(['plan', '--from', '2026-10-01', '--to', '2026-11-05'], env(schema))).output,
    );
    expect(text.find((l) => l.startsWith('2026-11-02..2026-11-05'))).toMatch(
      new RegExp(
        `^2026-11-02\\.\\.2026-11-05  load  todo +replaces 2026-11-02\\.\\.2026-11-08 \\(${rows} rows\\)$`,
      ),
    );
    expect(text.find((l) => l.startsWith('2026-11-06..2026-11-08'))).toContain('outside the range asked for');
  });
});

describe('the conventions of a command line (7)', () => {
  // biome-ignore lint/suspicious/noControlCharactersInRegex: a colour's escape sequence is what it finds.
  const COLOUR = /\u001b\[3\dm/;

  it('on a terminal by default: warnings, the bar and the closing sentence; no JSON line unless asked', async () => {
    const terminal = { ...env('conventions'), LOG_FORMAT: 'auto' };
    const quiet = await runOnTerminal(['backfill', '--from', FROM, '--to', TO], terminal);
    expect(quiet.code, quiet.output).toBe(0);
    const lines = terminalLines(quiet.output);
    expect(lines.filter((l) => l.includes('INFO'))).toEqual([]);
    expect(lines.filter((l) => l.startsWith('{'))).toEqual([]);
    expect(lines.some((l) => l.startsWith('Loaded '))).toBe(true);
    const asked = await runOnTerminal(['backfill', '--from', FROM, '--to', TO, '--json', '-v'], terminal);
    expect(asked.code, asked.output).toBe(0);
    expect(terminalLines(asked.output).some((l) => l.startsWith('{"command":"backfill"'))).toBe(true);
    expect(asked.output).toContain('DEBUG');
  });

  it('NO_COLOR and --no-color take the colour out; --log-level is case-insensitive; -q is --quiet', async () => {
    const terminal = { ...env('colours'), LOG_FORMAT: 'auto' };
    const args = ['backfill', '--from', FROM, '--to', TO, '--log-level', 'INFO'];
    const coloured = await runOnTerminal(args, terminal);
    expect(coloured.code, coloured.output).toBe(0);
    expect(coloured.output).toMatch(COLOUR);
    const plain = await runOnTerminal(args, { ...terminal, NO_COLOR: '1' });
    expect(plain.code, plain.output).toBe(0);
    expect(plain.output).toContain('INFO');
    expect(plain.output).not.toMatch(COLOUR);
    const flagged = await runOnTerminal([...args, '--no-color'], terminal);
    expect(flagged.output).not.toMatch(COLOUR);
    const q = await runCli(['backfill', '--from', FROM, '--to', TO, '-q'], env('colours'));
    expect(q.code, q.stderr).toBe(0);
    expect(q.stderr).toBe('');
  });

  it('a usage error on a terminal is one line, without the JSON line a pipe gets', async () => {
    const shown = await runOnTerminal(['backfill', '--from', FROM], env('usage'));
    expect(shown.code, shown.output).toBe(2);
    expect(terminalLines(shown.output).filter((l) => l.startsWith('{'))).toEqual([]);
    const piped = await runCli(['backfill', '--from', FROM], env('usage'));
    expect(piped.summary).toMatchObject({ status: 'invalid', exitCode: 2 });
  });

  it('help: a short root, the variables in `help environment`, grouped flags and examples, completion for three shells', async () => {
    const root = await runCli(['--help'], {});
    expect(root.stdout.trim().split('\n').length).toBeLessThanOrEqual(45);
    expect(root.stdout).not.toContain('POST_REPORTS_TOKEN');
    expect(root.stdout).toContain('help environment');
    const topic = await runCli(['help', 'environment'], {});
    expect(topic.code).toBe(0);
    expect(topic.stdout).toContain('POST_REPORTS_TOKEN');
    expect(topic.stdout).toContain('NO_COLOR');
    const backfill = await runCli(['backfill', '--help'], {});
    const headings = backfill.stdout.split('\n').filter((l) => /^[A-Z][a-z ]+:$/.test(l));
    expect(headings).toEqual(['What to load:', 'Where:', 'How:', 'Output:', 'Options:', 'Examples:']);
    expect(backfill.stdout.match(/^ {2}\$ post-reports-etl backfill/gm)?.length).toBeGreaterThan(2);
    const zsh = await runCli(['completion', 'zsh'], {});
    expect(zsh.code, zsh.stderr).toBe(0);
    expect(zsh.stdout).toContain('bashcompinit');
    const fish = await runCli(['completion', 'fish'], {});
    expect(fish.code, fish.stderr).toBe(0);
    expect(fish.stdout).toContain(
      "complete -c post-reports-etl -n '__fish_seen_subcommand_from backfill' -l from",
    );
  });
});
