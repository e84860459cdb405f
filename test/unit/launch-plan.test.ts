import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { launchPlan, parseConfig, readSettingsFile, type StartingProcess } from '../../src/config.js';

const folder = mkdtempSync(join(tmpdir(), 'post-reports-launch-'));
afterAll(() => rmSync(folder, { recursive: true, force: true }));
const noDotenv = join(folder, 'absent.env');

const started: StartingProcess = {
  execArgv: [],
  args: ['/opt/post-reports-etl/dist/bin/main.js', 'backfill', '--from', '2026-01-01'],
  canReplace: true,
};

describe('launchPlan: the memory settings the CLI gives its own process before it loads anything else', () => {
  it('restarts once, in place, with the semi-space of POST_REPORTS_SEMI_SPACE_MB (2 MB by default) and the old space of POST_REPORTS_OLD_SPACE_MB (32 MB) before the node flags it was given', () => {
    expect(launchPlan(started, { HOME: '/home/etl' }, noDotenv)).toEqual({
      action: 'restart',
      args: ['--max-semi-space-size=2', '--initial-old-space-size=32', ...started.args],
      env: { HOME: '/home/etl', MALLOC_ARENA_MAX: '1' },
    });
    const withFlags = { ...started, execArgv: ['--enable-source-maps'] };
    expect(
      launchPlan(withFlags, { POST_REPORTS_SEMI_SPACE_MB: ' 8 ', POST_REPORTS_OLD_SPACE_MB: '64' }, noDotenv),
    ).toMatchObject({
      action: 'restart',
      args: [
        '--max-semi-space-size=8',
        '--initial-old-space-size=64',
        '--enable-source-maps',
        ...started.args,
      ],
    });
  });

  it('adds only the flags the operator did not give: each of their own wins', () => {
    // Node refuses an initial old space in NODE_OPTIONS: an operator gives it as a node flag.
    expect(launchPlan({ ...started, execArgv: ['--initial-old-space-size=64'] }, {}, noDotenv)).toMatchObject(
      {
        action: 'restart',
        args: ['--max-semi-space-size=2', '--initial-old-space-size=64', ...started.args],
      },
    );
    expect(launchPlan({ ...started, execArgv: ['--max-semi-space-size=16'] }, {}, noDotenv)).toMatchObject({
      action: 'restart',
      args: ['--initial-old-space-size=32', '--max-semi-space-size=16', ...started.args],
    });
    expect(launchPlan(started, { POST_REPORTS_SEMI_SPACE_MB: '0' }, noDotenv)).toMatchObject({
      action: 'restart',
      args: ['--initial-old-space-size=32', ...started.args],
    });
  });

  it('hands a password of --database-url on in the environment (PGPASSWORD), never in the arguments', () => {
    const password = 'p@ss:w/rd é';
    const url = `postgres://etl:${encodeURIComponent(password)}@db.example.com:5432/reports?sslmode=verify-full`;
    for (const [given, handed] of [
      [
        ['--database-url', url],
        ['--database-url', 'postgres://etl@db.example.com:5432/reports?sslmode=verify-full'],
      ],
      [
        [`--database-url=${url}`],
        ['--database-url=postgres://etl@db.example.com:5432/reports?sslmode=verify-full'],
      ],
    ]) {
      const plan = launchPlan(
        { ...started, args: [...started.args, ...given!] },
        { PGPASSWORD: 'old' },
        noDotenv,
      );
      expect(plan).toMatchObject({ action: 'restart', args: expect.arrayContaining(handed!) });
      if (plan.action !== 'restart') throw new Error('no restart');
      expect(plan.args.join(' ')).not.toContain(encodeURIComponent(password));
      expect(plan.env.PGPASSWORD).toBe(password);
    }
    // Without a password, nothing moves.
    const plain = launchPlan(
      { ...started, args: [...started.args, '--database-url', 'postgres://etl@db/reports'] },
      {},
      noDotenv,
    );
    expect(plain).toMatchObject({
      action: 'restart',
      args: expect.arrayContaining(['postgres://etl@db/reports']),
    });
    expect(plain.action === 'restart' && plain.env.PGPASSWORD).toBe(undefined);
  });

  it('holds glibc to one malloc arena in the restarted process, unless the operator set their own', () => {
    expect(launchPlan(started, { MALLOC_ARENA_MAX: '4' }, noDotenv)).toMatchObject({
      action: 'restart',
      env: { MALLOC_ARENA_MAX: '4' },
    });
    expect(launchPlan(started, { MALLOC_ARENA_MAX: '0' }, noDotenv)).toMatchObject({
      env: { MALLOC_ARENA_MAX: '0' },
    });
  });

  it('does not restart a process that carries both already: its own restart, or the operator’s flags', () => {
    for (const execArgv of [
      ['--max-semi-space-size=2', '--initial-old-space-size=32'],
      ['--max_semi_space_size', '16', '--initial_old_space_size', '64'],
    ]) {
      expect(launchPlan({ ...started, execArgv }, {}, noDotenv)).toEqual({ action: 'none' });
    }
    expect(
      launchPlan(
        { ...started, execArgv: ['--initial-old-space-size=8'] },
        { NODE_OPTIONS: '--trace-warnings --max-semi-space-size=16' },
        noDotenv,
      ),
    ).toEqual({ action: 'none' });
  });

  it('leaves V8 its own young and old generations at 0, and a bad value to the configuration to report', () => {
    expect(
      launchPlan(started, { POST_REPORTS_SEMI_SPACE_MB: '0', POST_REPORTS_OLD_SPACE_MB: '0' }, noDotenv),
    ).toEqual({ action: 'none' });
    expect(launchPlan(started, { POST_REPORTS_SEMI_SPACE_MB: 'small' }, noDotenv)).toEqual({
      action: 'none',
    });
    expect(launchPlan(started, { POST_REPORTS_OLD_SPACE_MB: '-1' }, noDotenv)).toEqual({ action: 'none' });
    expect(() =>
      parseConfig({
        POST_REPORTS_BASE_URL: 'https://api.example.com/v4',
        POST_REPORTS_TOKEN: 'tok',
        DATABASE_URL: 'postgres://localhost/db',
        POST_REPORTS_OLD_SPACE_MB: '-1',
      }),
    ).toThrow('POST_REPORTS_OLD_SPACE_MB must be an integer from 0 to 1024, got "-1"');
    expect(() =>
      parseConfig({
        POST_REPORTS_BASE_URL: 'https://api.example.com/v4',
        POST_REPORTS_TOKEN: 'tok',
        DATABASE_URL: 'postgres://localhost/db',
        POST_REPORTS_SEMI_SPACE_MB: 'small',
      }),
    ).toThrow('POST_REPORTS_SEMI_SPACE_MB must be an integer from 0 to 256, got "small"');
  });

  it('keeps the young generation at its initial size in this process where it cannot replace itself, or a debugger is attached', () => {
    const flags = { action: 'flags', v8Flags: ['--semi-space-growth-factor=1'] };
    expect(launchPlan({ ...started, canReplace: false }, {}, noDotenv)).toEqual(flags);
    expect(launchPlan({ ...started, execArgv: ['--inspect=9229'] }, {}, noDotenv)).toEqual(flags);
    // The old space has no stand-in once the heap is set up.
    expect(
      launchPlan({ ...started, canReplace: false }, { POST_REPORTS_SEMI_SPACE_MB: '0' }, noDotenv),
    ).toEqual({ action: 'none' });
  });

  it('reads the .env file under the environment, as every setting', () => {
    const dotenv = join(folder, '.env');
    writeFileSync(dotenv, 'POST_REPORTS_SEMI_SPACE_MB=0\nPOST_REPORTS_OLD_SPACE_MB=0\n');
    expect(launchPlan(started, {}, dotenv)).toEqual({ action: 'none' });
    expect(launchPlan(started, { POST_REPORTS_SEMI_SPACE_MB: '4' }, dotenv)).toMatchObject({
      args: ['--max-semi-space-size=4', ...started.args],
    });
  });

  it('is refused in a configuration file, which the CLI reads only after its start', () => {
    const file = join(folder, 'settings.json');
    writeFileSync(file, JSON.stringify({ POST_REPORTS_SEMI_SPACE_MB: 4 }));
    expect(() => readSettingsFile(file)).toThrow(
      `${file}: POST_REPORTS_SEMI_SPACE_MB is read when the CLI starts, before this file: set it in the environment`,
    );
  });
});
