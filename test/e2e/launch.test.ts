import { chmod, mkdir, mkdtemp, rm, symlink } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { delimiter, dirname, join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type CliResult, runProgram } from '../helpers/cli.js';
import { createTestDatabase } from '../helpers/database.js';
import { copyBuiltPackage, type PackageCopy } from '../helpers/package-copy.js';

const db = await createTestDatabase();
let copy: PackageCopy;
let folder: string;
/** The package's bin as npm links it: node_modules/.bin/post-reports-etl, a link to the executable main.js. */
let bin: string;

beforeAll(async () => {
  copy = await copyBuiltPackage();
  await chmod(copy.cli, 0o755);
  folder = await mkdtemp(join(tmpdir(), 'post-reports-bin-'));
  await mkdir(join(folder, 'node_modules', '.bin'), { recursive: true });
  bin = join(folder, 'node_modules', '.bin', 'post-reports-etl');
  await symlink(copy.cli, bin);
});
afterAll(async () => {
  await rm(folder, { recursive: true, force: true });
  await copy.remove();
});

interface Runtime {
  readonly pid: number;
  readonly nodeFlags: readonly string[];
}

/** Runs the bin (its `#!/usr/bin/env node` finding this Node first on PATH) with exactly `env`, and its debug log. */
async function runBin(
  args: readonly string[],
  env: Record<string, string> = {},
): Promise<{ result: CliResult; pid: number | undefined; runtime: Runtime | undefined }> {
  let pid: number | undefined;
  const result = await runProgram(
    bin,
    args,
    {
      PATH: `${dirname(process.execPath)}${delimiter}${process.env.PATH ?? ''}`,
      DATABASE_URL: db.url,
      LOG_LEVEL: 'debug',
      LOG_FORMAT: 'json',
      ...env,
    },
    { cwd: folder, onSpawn: (child) => (pid = child.pid) },
  );
  const runtime = result.stderr
    .split('\n')
    .filter((line) => line.includes('"msg":"runtime"'))
    .map((line) => JSON.parse(line) as Runtime)[0];
  return { result, pid, runtime };
}

describe('the CLI as installed keeps its memory flat with no flag to set (the built bin, through its npm link)', () => {
  it('restarts itself once, in place, with the semi-space of POST_REPORTS_SEMI_SPACE_MB and the old space of POST_REPORTS_OLD_SPACE_MB: the same process, its output and exit code (where Node cannot replace a process, it runs on as started)', async () => {
    // Node 22.15 and later, but not on Windows: the CLI's own test (main.ts canReplace) with this Node.
    const replaces = typeof process.execve === 'function' && process.platform !== 'win32';
    const flags = (mb: number, old = 32) =>
      replaces ? [`--max-semi-space-size=${mb}`, `--initial-old-space-size=${old}`] : [];
    const { result, pid, runtime } = await runBin(['migrate', '--schema', 'launched', '--json']);
    expect(result.code, result.stderr).toBe(0);
    expect(result.summary).toMatchObject({ command: 'migrate', status: 'succeeded' });
    expect(runtime).toMatchObject({ pid, nodeFlags: flags(2) });

    const sized = await runBin(['migrate', '--schema', 'launched', '--json'], {
      POST_REPORTS_SEMI_SPACE_MB: '6',
      POST_REPORTS_OLD_SPACE_MB: '48',
    });
    expect(sized.result.code, sized.result.stderr).toBe(0);
    expect(sized.runtime).toMatchObject({ pid: sized.pid, nodeFlags: flags(6, 48) });
  });

  it("leaves V8 its own young and old generations at 0, and an operator's own flags as given", async () => {
    const own = await runBin(['migrate', '--schema', 'launched', '--json'], {
      POST_REPORTS_SEMI_SPACE_MB: '0',
      POST_REPORTS_OLD_SPACE_MB: '0',
    });
    expect(own.result.code, own.result.stderr).toBe(0);
    expect(own.runtime).toMatchObject({ pid: own.pid, nodeFlags: [] });

    // Node takes a semi-space from NODE_OPTIONS, not an initial old space: the CLI adds only the latter.
    const replaces = typeof process.execve === 'function' && process.platform !== 'win32';
    const operators = await runBin(['migrate', '--schema', 'launched', '--json'], {
      NODE_OPTIONS: '--max-semi-space-size=8',
    });
    expect(operators.result.code, operators.result.stderr).toBe(0);
    expect(operators.runtime).toMatchObject({
      pid: operators.pid,
      nodeFlags: replaces ? ['--initial-old-space-size=32'] : [],
    });
  });

  it('refuses a bad POST_REPORTS_SEMI_SPACE_MB as any bad setting (exit 2), from a process started as usual', async () => {
    const { result } = await runBin(['migrate', '--schema', 'launched', '--json'], {
      POST_REPORTS_SEMI_SPACE_MB: 'small',
    });
    expect(result.code).toBe(2);
    expect(result.stderr).toContain(
      'POST_REPORTS_SEMI_SPACE_MB must be an integer from 0 to 256, got "small"',
    );
    expect(result.summary).toMatchObject({ command: 'migrate', status: 'invalid' });
  });
});
