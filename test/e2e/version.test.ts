import { readFileSync } from 'node:fs';
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { startSimulator } from '../../src/simulator/server.js';
import { runCli } from '../helpers/cli.js';
import { createTestDatabase } from '../helpers/database.js';
import { cliEnv } from '../helpers/e2e-env.js';
import { copyBuiltPackage } from '../helpers/package-copy.js';

const { version } = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as {
  version: string;
};
const db = await createTestDatabase();
const sim = await startSimulator({ seed: 61, postsPerDay: 3 });
afterAll(() => sim.close());

describe("the connector's version (the built CLI)", () => {
  it('--version and -V print the version of package.json, and nothing else', async () => {
    for (const flag of ['--version', '-V']) {
      const result = await runCli([flag], {});
      expect(result.code).toBe(0);
      expect(result.stdout).toBe(`${version}\n`);
      expect(result.stderr).toBe('');
    }
  });

  it('is in the summary line and in the run started log line, and in the summary of a run that fails', async () => {
    const result = await runCli(
      ['backfill', '--from', '2025-07-07', '--to', '2025-07-13', '--schema', 'versioned'],
      cliEnv(sim, db.url),
    );
    expect(result.code, result.stderr).toBe(0);
    expect(result.summary).toMatchObject({ command: 'backfill', version, status: 'succeeded' });
    const started = result.stderr
      .split('\n')
      .filter((line) => line.includes('"msg":"run started"'))
      .map((line) => JSON.parse(line) as { version?: string });
    expect(started).toEqual([expect.objectContaining({ version })]);

    const refused = await runCli(['backfill', '--from', '2025-07-07', '--to', '2025-07-13'], {
      ...cliEnv(sim, db.url),
      POST_REPORTS_WINDOW_DAYS: 'seven',
    });
    expect(refused.code).toBe(2);
    expect(refused.summary).toMatchObject({ version, status: 'invalid' });
  });
});

describe('a Node older than the package supports (the built CLI, a copy whose engines ask for more)', () => {
  it('warns at start, naming the Node running and the versions supported, and goes on', async () => {
    const copy = await copyBuiltPackage();
    try {
      const manifestPath = join(copy.dir, 'package.json');
      const manifest = JSON.parse(await readFile(manifestPath, 'utf8')) as Record<string, unknown>;
      await writeFile(manifestPath, JSON.stringify({ ...manifest, engines: { node: '>=999.1' } }));
      const result = await runCli(['--version'], {}, { cli: copy.cli });
      expect(result.code).toBe(0);
      expect(result.stdout).toBe(`${version}\n`);
      expect(result.stderr).toBe(
        `post-reports-etl: warning: Node ${process.versions.node} is older than this version supports (>=999.1): its commands run, its tests and benchmark do not; upgrade Node\n`,
      );
    } finally {
      await copy.remove();
    }
  });
});
