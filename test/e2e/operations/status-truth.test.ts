import { spawn } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, it, onTestFinished } from 'vitest';
import type { SchemaStatus } from '../../../src/pipeline/schema-status.js';
import { type RunningSimulator, startSimulator } from '../../../src/simulator/server.js';
import { CLI, runCli, startCli } from '../../helpers/cli.js';
import { createTestDatabase } from '../../helpers/database.js';
import { cliEnv } from '../../helpers/e2e-env.js';
import { runOnTerminal, terminalLines } from '../../helpers/terminal.js';

const db = await createTestDatabase();
let sim: RunningSimulator;
/** Without latency, for many small windows. */
let quick: RunningSimulator;

beforeAll(async () => {
  sim = await startSimulator({ seed: 47, postsPerDay: 20 });
  quick = await startSimulator({ seed: 47, postsPerDay: 2 });
});
afterAll(async () => {
  await sim.close();
  await quick.close();
});

async function status(env: Record<string, string>): Promise<SchemaStatus> {
  const result = await runCli(['status', '--json'], env);
  expect(result.code, result.stderr).toBe(0);
  return result.summary as unknown as SchemaStatus;
}

/** Runs `command` in bash with the CLI as `$CLI`; its exit code is the CLI's (pipefail). */
function shell(
  command: string,
  env: Record<string, string>,
): Promise<{ code: number | null; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn('bash', ['-c', `set -o pipefail; ${command}`], {
      env: { PATH: process.env.PATH ?? '', CLI, NODE: process.execPath, ...env },
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    let stderr = '';
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => {
      stderr += chunk;
    });
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stderr }));
  });
}

describe('status tells the truth (the built CLI)', () => {
  it('windows of a run killed or stopped are interrupted, not in progress; a live run’s are in progress', async () => {
    const args = ['backfill', '--from', '2026-06-01', '--to', '2026-06-21', '--concurrency', '1'];
    for (const signal of ['SIGKILL', 'SIGTERM'] as const) {
      const env = cliEnv(sim, db.url, { POST_REPORTS_SCHEMA: `truth_${signal.toLowerCase()}` });
      // Reports that stay IN_PROGRESS hold the run on its first window for as long as the test needs.
      sim.setFaults({ reportStatusOverride: 'IN_PROGRESS' });
      onTestFinished(() => sim.setFaults({ reportStatusOverride: null }));
      const run = startCli(args, env);
      await run.waitForOutput('"msg":"report created"');
      // While the run lives, its window is in progress and the run is named.
      const live = await status(env);
      expect(live.run).not.toBeNull();
      expect(live.windows.inProgress).toBe(1);
      expect(live.details.find((w) => w.start === '2026-06-01')?.standing).toBe('in progress');

      run.child.kill(signal);
      await run.done;
      const after = await status(env);
      expect(after.run).toBeNull();
      expect(after.windows.inProgress).toBe(0);
      expect(after.windows.interrupted).toBeGreaterThanOrEqual(1);
      expect(after.details.find((w) => w.start === '2026-06-01')?.standing).toBe('interrupted');
      // Every window is counted once, whatever its recorded status (pending included).
      const { total, loaded, failed, inProgress, interrupted, superseded } = after.windows;
      expect(loaded + failed + inProgress + interrupted + superseded).toBe(total);
      expect(total).toBe(after.details.length);

      const text = terminalLines((await runOnTerminal(['status'], env)).output);
      expect(text[0]).toMatch(/0 in progress, [1-9]\d* interrupted; \d+ posts; .*; no run in progress$/);
      expect(text.some((line) => /^2026-06-01\.\.2026-06-07 {2}interrupted /.test(line))).toBe(true);

      sim.setFaults({ reportStatusOverride: null });
      const done = await runCli(args, env);
      expect(done.code, done.stderr).toBe(0);
      const finished = await status(env);
      expect(finished.windows).toMatchObject({ total: 3, loaded: 3, inProgress: 0, interrupted: 0 });
    }
  });

  it('output to a closed pipe ends quietly, with the command’s exit code', async () => {
    const env = cliEnv(quick, db.url, { POST_REPORTS_SCHEMA: 'piped' });
    const many = await runCli(
      ['backfill', '--from', '2026-01-01', '--to', '2026-03-31', '--window-days', '1', '--concurrency', '8'],
      env,
    );
    expect(many.code, many.stderr).toBe(0);
    for (const command of [
      '"$NODE" "$CLI" status | head -n 0',
      '"$NODE" "$CLI" status | head -5',
      '"$NODE" "$CLI" status --json | head -c 10',
    ]) {
      const result = await shell(command, env);
      expect(result.stderr, command).toBe('');
      expect(result.code, command).toBe(0);
    }
  });
});
