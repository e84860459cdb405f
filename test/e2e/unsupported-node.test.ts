import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, readFile, rename, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';

const run = promisify(execFile);
const CHECKOUT = fileURLToPath(new URL('../../', import.meta.url));

/** A Node the package does not support: past its end of life, still the default on many machines. */
const OLD_NODE_VERSION = '20.20.2';

/**
 * The old Node's binary: TEST_OLD_NODE when set (CI installs it beside 22 and 24), otherwise the same release
 * from the npm registry (node-<platform>-<arch>, the binary at package/bin/node), kept under node_modules/.cache.
 */
async function oldNode(): Promise<string> {
  const given = process.env.TEST_OLD_NODE;
  if (given) return given;
  const dir = join(CHECKOUT, 'node_modules', '.cache', 'post-reports-etl', `node-${OLD_NODE_VERSION}`);
  const binary = join(dir, 'bin', 'node');
  if (existsSync(binary)) return binary;
  const unpack = await mkdtemp(join(CHECKOUT, 'node_modules', '.cache-old-node-'));
  try {
    const name = `node-${process.platform}-${process.arch}@${OLD_NODE_VERSION}`;
    const { stdout } = await run('npm', ['pack', '--silent', name], { cwd: unpack });
    await run('tar', ['xzf', stdout.trim()], { cwd: unpack });
    await mkdir(join(dir, '..'), { recursive: true });
    await rm(dir, { recursive: true, force: true });
    await rename(join(unpack, 'package'), dir);
    return binary;
  } finally {
    await rm(unpack, { recursive: true, force: true });
  }
}

describe(`npm test on Node ${OLD_NODE_VERSION}, older than the package supports`, () => {
  it('stops at its first step with one line naming both versions and how to get a supported Node', async () => {
    const manifest = JSON.parse(await readFile(join(CHECKOUT, 'package.json'), 'utf8')) as {
      scripts: Record<string, string>;
      engines: { node: string };
    };
    // npm runs `pretest` before `test`; its first command is the check, run here as npm would run it.
    const [first] = manifest.scripts.pretest?.split(' && ') ?? [];
    const [command, script, ...rest] = first?.split(' ') ?? [];
    expect(command).toBe('node');
    expect(rest).toEqual([]);

    const node = await oldNode();
    const { stdout: version } = await run(node, ['--version']);
    expect(version.trim()).toBe(`v${OLD_NODE_VERSION}`);

    const failed = await run(node, [script ?? ''], { cwd: CHECKOUT, timeout: 30_000 }).then(
      () => null,
      (error: { code: number; stdout: string; stderr: string }) => error,
    );
    expect(failed).not.toBeNull();
    expect(failed?.code).toBe(1);
    expect(failed?.stdout).toBe('');
    const lines = failed?.stderr.split('\n').filter((line) => line !== '') ?? [];
    expect(lines).toHaveLength(1);
    expect(lines[0]).toContain(`need Node ${manifest.engines.node}; this is Node ${OLD_NODE_VERSION}`);
    expect(lines[0]).toContain(`npm pack node-${process.platform}-${process.arch}@24`);
  });

  it('lets a supported Node through', async () => {
    const { stdout, stderr } = await run(process.execPath, ['test/helpers/supported-node.mjs'], {
      cwd: CHECKOUT,
    });
    expect({ stdout, stderr }).toEqual({ stdout: '', stderr: '' });
  });
});
