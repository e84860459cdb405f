import { chmod, mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { addDays } from '../../../src/model/dates.js';
import { EXIT } from '../../../src/pipeline/exit-codes.js';
import { gridStart } from '../../../src/pipeline/windows.js';
import { type RunningSimulator, startSimulator } from '../../../src/simulator/server.js';
import { CLI, runProgram } from '../../helpers/cli.js';
import { createTestDatabase } from '../../helpers/database.js';
import { cliEnv } from '../../helpers/e2e-env.js';
import { needPython } from '../../helpers/python.js';
import { TODAY } from '../../helpers/today.js';

const README = await readFile(new URL('../../../README.md', import.meta.url), 'utf8');
const DOCKERFILE = await readFile(new URL('../../../Dockerfile', import.meta.url), 'utf8');
const ROOT = new URL('../../..', import.meta.url).pathname;
const db = await createTestDatabase();
let sim: RunningSimulator;
let work: string;
const start = addDays(TODAY, -10);
/** The first window's report ends FAILED (whether it begins on the grid or at the start date): exit 3. */
const failing = [start, gridStart(start, 7)];

beforeAll(async () => {
  sim = await startSimulator({ seed: 59, postsPerDay: 5, faults: { failReportStartDates: failing } });
  work = await mkdtemp(join(tmpdir(), 'recipes-'));
  // A `mail` that keeps what it was sent, instead of mailing it.
  await mkdir(join(work, 'bin'));
  await writeFile(join(work, 'bin', 'mail'), `#!/bin/sh\ncat >> "${work}/mail.txt"\n`);
  await chmod(join(work, 'bin', 'mail'), 0o755);
});
afterAll(async () => {
  await sim.close();
  await rm(work, { recursive: true, force: true });
});

/** The body of the README's fenced block of `language` that follows `heading`. */
function recipe(heading: string, language: string): string {
  const at = README.indexOf(heading);
  expect(at, heading).toBeGreaterThan(-1);
  const open = README.indexOf(`\`\`\`${language}\n`, at) + language.length + 4;
  return README.slice(open, README.indexOf('\n```', open));
}

/** The environment of a failing sync into `schema` (the recipes configure nothing but the command). */
function failingEnv(schema: string): Record<string, string> {
  return {
    ...cliEnv(sim, db.url, { POST_REPORTS_SCHEMA: schema }),
    POST_REPORTS_START_DATE: start,
    POST_REPORTS_WINDOW_ATTEMPTS: '1',
    PATH: `${join(work, 'bin')}:${process.env.PATH ?? ''}`,
    NODE: process.execPath,
    CLI,
  };
}

/** The recipe's command with the CLI of this checkout in place of the installed one. */
function local(command: string): string {
  return command.replaceAll('npx post-reports-etl', '"$NODE" "$CLI"');
}

interface Ran {
  readonly code: number | null;
  readonly stdout: string;
  readonly stderr: string;
}

function run(file: string, args: readonly string[], env: Record<string, string>, cwd = work): Promise<Ran> {
  return runProgram(file, args, env, { cwd });
}

describe('every scheduling recipe of the README hands the exit code to its scheduler (a failing run)', () => {
  it('cron: the line exits with the run’s code after mailing it', async () => {
    const line = recipe('**cron**', 'cron');
    // The five schedule fields, then the command cron gives to /bin/sh.
    const command = line.split(/\s+/).slice(5).join(' ');
    const result = await run(
      'sh',
      [
        '-c',
        local(command).replaceAll('/opt/post-reports-etl', work).replaceAll('/var/log/post-reports', work),
      ],
      failingEnv('cron'),
    );
    expect(result.code, result.stderr).toBe(EXIT.partial);
    expect(await readFile(join(work, 'mail.txt'), 'utf8')).toBe(`post-reports-etl exit ${EXIT.partial}\n`);
    const summary = (await readFile(join(work, 'summary.jsonl'), 'utf8')).trim();
    expect(JSON.parse(summary)).toMatchObject({ status: 'partial', exitCode: EXIT.partial });
  });

  it('cron, every organization in one job: the line exits with the most serious of their codes', async () => {
    const line = recipe('**Several organizations** on a schedule', 'cron');
    const command = line.split(/\s+/).slice(5).join(' ');
    // acme's first window fails (3); globex has no start date, which its first sync needs (2).
    await mkdir(join(work, 'etc'), { recursive: true });
    const file = join(work, 'etc', 'organizations.json');
    await writeFile(
      file,
      JSON.stringify({ acme: { POST_REPORTS_START_DATE: start }, globex: { POST_REPORTS_MARKETS: ['US'] } }),
    );
    await chmod(file, 0o600);
    const { POST_REPORTS_START_DATE: _everyone, ...env } = failingEnv('cron_organizations');
    const result = await run(
      'sh',
      [
        '-c',
        local(command)
          .replaceAll('/opt/post-reports-etl', work)
          .replaceAll('/var/log/post-reports', work)
          .replaceAll('/etc/post-reports', join(work, 'etc')),
      ],
      env,
    );
    expect(result.code, result.stderr).toBe(EXIT.usage);
    expect(await readFile(join(work, 'mail.txt'), 'utf8')).toContain(`post-reports-etl exit ${EXIT.usage}\n`);
    const summary = (await readFile(join(work, 'summary.jsonl'), 'utf8')).trim().split('\n').at(-1) ?? '';
    expect(JSON.parse(summary)).toMatchObject({
      exitCode: EXIT.usage,
      organizations: [
        { organization: 'acme', status: 'partial', exitCode: EXIT.partial },
        { organization: 'globex', status: 'invalid', exitCode: EXIT.usage },
      ],
    });
  });

  it('Airflow: the bash_command fails with the run’s code, and its last stdout line is the summary', async () => {
    const python = recipe('**Airflow**', 'python');
    const match = /bash_command="([^"\n]*(?:\\.[^"\n]*)*)"/.exec(python);
    expect(match, python).not.toBeNull();
    const command = local(match?.[1] ?? '').replaceAll('{{ var.value.etl_log }}', join(work, 'airflow.log'));
    // BashOperator runs its command with bash.
    const result = await run('bash', ['-c', command], failingEnv('airflow'));
    expect(result.code, result.stderr).toBe(EXIT.partial);
    expect(JSON.parse(result.stdout.trim().split('\n').at(-1) ?? '')).toMatchObject({ status: 'partial' });
  });

  it('Kubernetes: the container (the image’s ENTRYPOINT and the CronJob’s args) exits with the run’s code', async () => {
    const yaml = recipe('**Kubernetes CronJob**', 'yaml');
    const entrypoint = JSON.parse(/^ENTRYPOINT (\[.*\])$/m.exec(DOCKERFILE)?.[1] ?? 'null') as string[];
    const args = JSON.parse(/^\s+args: (\[.*\])/m.exec(yaml)?.[1] ?? 'null') as string[];
    expect(entrypoint[0]).toBe('node');
    // Exec form: no shell between the container runtime and node.
    const result = await run(
      process.execPath,
      [...entrypoint.slice(1), ...args],
      failingEnv('kubernetes'),
      ROOT,
    );
    expect(result.code, result.stderr).toBe(EXIT.partial);
    // The podFailurePolicy fails the job at once on the code that needs a person.
    expect(/onExitCodes: \{ operator: In, values: \[(\d+)\] \}/.exec(yaml)?.[1]).toBe(String(EXIT.usage));
  });

  it('Dagster: the asset raises Failure with the run’s code', async () => {
    needPython();
    const python = recipe('**Dagster**', 'python');
    // Dagster itself is not needed to run the asset's body: a stand-in module with the three names it imports.
    await writeFile(
      join(work, 'dagster.py'),
      [
        'def asset(fn):',
        '    return fn',
        'class Failure(Exception):',
        '    def __init__(self, description=None, metadata=None):',
        '        super().__init__(description)',
        '        self.metadata = metadata',
        'class MaterializeResult:',
        '    def __init__(self, metadata=None):',
        '        self.metadata = metadata',
        '',
      ].join('\n'),
    );
    const asset = python
      .replace(
        '["npx", "post-reports-etl", "sync"]',
        `[${JSON.stringify(process.execPath)}, ${JSON.stringify(CLI)}, "sync"]`,
      )
      .replace('"/opt/post-reports-etl"', JSON.stringify(work));
    const script = `${asset}\ntry:\n    post_reports()\n    print("no failure")\nexcept Failure as failure:\n    print(failure)\n`;
    const result = await run('python3', ['-c', script], { ...failingEnv('dagster'), PYTHONPATH: work });
    expect(result.code, result.stderr).toBe(0);
    expect(result.stdout.trim()).toBe(`exit ${EXIT.partial}: partial`);
  });
});
