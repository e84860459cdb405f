import { describe, expect, it } from 'vitest';
import { runCli } from '../../helpers/cli.js';

/** Nothing is reached: a usage error is found before any connection. */
const ENV = {
  POST_REPORTS_BASE_URL: 'http://127.0.0.1:9/v4',
  POST_REPORTS_TOKEN: 't',
  POST_REPORTS_ALLOW_HTTP: 'true',
  DATABASE_URL: 'postgres://postgres@127.0.0.1:9/none',
};

/** The first line of stderr, and whether stderr says anything else than the error and where help is. */
function errorLine(stderr: string): string {
  const lines = stderr.trim().split('\n');
  expect(lines.length, stderr).toBeLessThanOrEqual(2);
  return lines[0] ?? '';
}

describe('usage errors exit 2 in every command (the built CLI)', () => {
  it.each([
    {
      args: ['backfill', '--from', '2026-10-01', '--to', '2026-10-14', '--concurency', '2'],
      typed: '--concurency',
      nearest: '--concurrency',
    },
    { args: ['backfill', '--form', '2026-10-01', '--to', '2026-10-14'], typed: '--form', nearest: '--from' },
    { args: ['sync', '--start-dat', '2026-10-01'], typed: '--start-dat', nearest: '--start-date' },
    { args: ['migrate', '--shema', 'x'], typed: '--shema', nearest: '--schema' },
    { args: ['status', '--jsn'], typed: '--jsn', nearest: '--json' },
    { args: ['plan', '--sycn'], typed: '--sycn', nearest: '--sync' },
    { args: ['dimensions', '--base-ulr', 'x'], typed: '--base-ulr', nearest: '--base-url' },
    { args: ['demo', '--dayz', '1'], typed: '--dayz', nearest: '--days' },
  ])('$args.0 $typed: exit 2, naming what was typed and $nearest', async ({ args, typed, nearest }) => {
    const result = await runCli(args, ENV);
    expect(result.code, result.stderr).toBe(2);
    const line = errorLine(result.stderr);
    expect(line).toMatch(/^post-reports-etl: error: /);
    expect(line).toContain(`'${typed}'`);
    expect(line).toContain(nearest);
  });

  it.each([
    { args: ['backfill', '--to', '2026-10-14'], message: "required option '--from <date>' not specified" },
    { args: ['backfill', '--from', '2026-10-01'], message: "required option '--to <date>' not specified" },
    { args: ['status', 'extra'], message: "too many arguments for 'status'" },
    { args: ['sync', 'extra'], message: "too many arguments for 'sync'" },
    { args: ['migrate', 'extra'], message: "too many arguments for 'migrate'" },
  ])('$args: exit 2, one line: $message', async ({ args, message }) => {
    const result = await runCli(args, ENV);
    expect(result.code, result.stderr).toBe(2);
    expect(errorLine(result.stderr)).toContain(message);
  });

  it.each([
    ['backfill', '--from', '2026-10-01', '--to', '2026-10-14', '--concurency', '2'],
    ['backfill', '--from', '2026-10-01'],
    ['sync', 'extra'],
    ['sync', '--progress-interval', 'soon'],
    ['migrate', '--shema', 'x'],
  ])('%s with a usage error prints its JSON summary line on stdout, as a run does', async (...args) => {
    const result = await runCli(args, ENV);
    expect(result.code).toBe(2);
    expect(result.stdout.trim().split('\n')).toHaveLength(1);
    expect(result.summary).toMatchObject({
      command: args[0],
      status: 'invalid',
      exitCode: 2,
      error: { code: 'CONFIG_INVALID' },
    });
    expect(result.summary?.error).toEqual({
      code: 'CONFIG_INVALID',
      message: errorLine(result.stderr).replace(/^post-reports-etl: error: /, ''),
    });
  });

  it('a mistyped command still exits 2, and --help and --version exit 0', async () => {
    expect((await runCli(['backfil'], ENV)).code).toBe(2);
    expect((await runCli(['backfill', '--help'], ENV)).code).toBe(0);
    expect((await runCli(['--version'], ENV)).code).toBe(0);
  });
});
