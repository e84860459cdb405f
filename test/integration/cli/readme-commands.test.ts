import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type RunningSimulator, startSimulator } from '../../../src/simulator/server.js';
import { runCli } from '../../helpers/cli.js';
import { createTestDatabase } from '../../helpers/database.js';
import { cliEnv } from '../../helpers/e2e-env.js';
import { runOnTerminal } from '../../helpers/terminal.js';

const README = readFileSync(new URL('../../../README.md', import.meta.url), 'utf8');
const COMMANDS = ['demo', 'backfill', 'sync', 'migrate', 'status', 'dimensions', 'simulator'];

const db = await createTestDatabase();
let sim: RunningSimulator;

beforeAll(async () => {
  sim = await startSimulator({ seed: 3, postsPerDay: 5 });
});
afterAll(async () => {
  await sim.close();
});

describe("the README's CLI examples, against the simulator", () => {
  it('documents every command, and each answers --help', async () => {
    const help = await runCli(['--help'], {});
    expect(help.code).toBe(0);
    for (const command of COMMANDS) {
      expect(help.stdout).toContain(command);
      expect(README).toContain(`post-reports-etl ${command}`);
      const result = await runCli([command, '--help'], {});
      expect(result.code).toBe(0);
      expect(result.stdout).toContain(`Usage: post-reports-etl ${command}`);
    }
  });

  it('documents every flag of backfill and sync in the configuration table', async () => {
    for (const command of ['backfill', 'sync']) {
      const { stdout } = await runCli([command, '--help'], {});
      const flags = [...stdout.matchAll(/(--[a-z][a-z-]+)/g)].map((m) => m[1] as string);
      for (const flag of new Set(flags)) {
        if (['--help', '--from', '--to', '--reload', '--reset'].includes(flag)) continue;
        expect(README, flag).toContain(`\`${flag}`);
      }
    }
  });

  it('migrate, status, status --json and dimensions run as the README shows', async () => {
    const env = cliEnv(sim, db.url, { POST_REPORTS_SCHEMA: 'readme' });
    const migrate = await runCli(['migrate'], env);
    expect(migrate.code).toBe(0);
    expect(migrate.summary).toMatchObject({ schema: 'readme' });

    const backfill = await runCli(['backfill', '--from', '2026-01-05', '--to', '2026-01-11'], env);
    expect(backfill.code).toBe(0);

    const status = await runOnTerminal(['status'], env);
    expect(status.code).toBe(0);
    expect(status.output).toContain(
      'schema readme: 1 window loaded, 0 failed, 0 in progress, 0 interrupted; 35 posts',
    );
    const json = await runCli(['status', '--json'], env);
    expect(json.summary).toMatchObject({ schema: 'readme', windows: { loaded: 1 }, posts: 35 });

    const dimensions = await runCli(['dimensions'], env);
    expect(dimensions.code).toBe(0);
    expect(JSON.parse(dimensions.stdout)).toHaveProperty('brands');
  });
});
