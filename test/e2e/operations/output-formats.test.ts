import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { addDays } from '../../../src/model/dates.js';
import { type RunningSimulator, startSimulator } from '../../../src/simulator/server.js';
import { runCli, startCli } from '../../helpers/cli.js';
import { createTestDatabase } from '../../helpers/database.js';
import { cliEnv } from '../../helpers/e2e-env.js';
import { runOnTerminal, terminalLines } from '../../helpers/terminal.js';
import { TODAY, testNow } from '../../helpers/today.js';

const db = await createTestDatabase();
let sim: RunningSimulator;
const FROM = '2026-03-02';
const TO = '2026-03-15';

beforeAll(async () => {
  sim = await startSimulator({ seed: 47, postsPerDay: 4, now: testNow() });
});
afterAll(async () => {
  await sim.close();
});

function isJson(line: string): boolean {
  try {
    JSON.parse(line);
    return true;
  } catch {
    return false;
  }
}

describe('every command in both forms: for a person on a terminal, JSON with --json or piped (the built CLI)', () => {
  it('plan, dimensions and migrate print for a person on a terminal, and JSON with --json', async () => {
    const env = cliEnv(sim, db.url, { POST_REPORTS_SCHEMA: 'formats' });
    expect((await runCli(['backfill', '--from', FROM, '--to', addDays(FROM, 6)], env)).code).toBe(0);

    const plan = await runOnTerminal(['plan', '--from', FROM, '--to', TO], env);
    expect(plan.code, plan.output).toBe(0);
    expect(terminalLines(plan.output)).toEqual([
      '2 windows, 1 to load:',
      expect.stringMatching(new RegExp(`^${FROM}\\.\\.${addDays(FROM, 6)}  skip  loaded\\s+rows 28$`)),
      `${addDays(FROM, 7)}..${TO}  load  todo`,
    ]);
    const planJson = await runOnTerminal(['plan', '--from', FROM, '--to', TO, '--json'], env);
    expect(terminalLines(planJson.output).map(isJson)).toEqual([true, true]);

    const dimensions = await runOnTerminal(['dimensions'], env);
    expect(dimensions.code, dimensions.output).toBe(0);
    expect(terminalLines(dimensions.output).some((line) => /^brands: \S/.test(line))).toBe(true);
    const dimensionsJson = await runOnTerminal(['dimensions', '--json'], env);
    expect(dimensionsJson.code, dimensionsJson.output).toBe(0);
    expect(terminalLines(dimensionsJson.output)).toHaveLength(1);
    expect(JSON.parse(terminalLines(dimensionsJson.output)[0] ?? '')).toHaveProperty('brands');
    const dimensionsPiped = await runCli(['dimensions', '--json'], env);
    expect(dimensionsPiped.code).toBe(0);
    expect(dimensionsPiped.summary).toHaveProperty('brands');

    const migrate = await runOnTerminal(['migrate'], env);
    expect(migrate.code, migrate.output).toBe(0);
    expect(terminalLines(migrate.output)).toContain('schema formats: up to date, no migration pending');
    const migrateJson = await runOnTerminal(['migrate', '--json'], env);
    expect(terminalLines(migrateJson.output).filter(isJson)).toHaveLength(1);
  });

  it('status: "1 window", open windows shown as open, each count in the singular or plural it needs', async () => {
    const env = cliEnv(sim, db.url, { POST_REPORTS_SCHEMA: 'open_status' });
    expect(
      (await runCli(['backfill', '--from', addDays(TODAY, -2), '--to', addDays(TODAY, 4)], env)).code,
    ).toBe(0);
    const status = await runOnTerminal(['status'], env);
    expect(status.code, status.output).toBe(0);
    const [head, ...windows] = terminalLines(status.output);
    expect(head).toMatch(/^schema open_status: 1 window loaded \(1 open\), 0 failed, /);
    expect(windows).toHaveLength(1);
    expect(windows[0]).toContain(`open (through ${addDays(TODAY, -1)})`);
  });

  it('status names a live run by its run id, process id and host, the same for the run and its windows', async () => {
    const slow = await startSimulator({ seed: 48, postsPerDay: 4, generationDelayMs: 30_000 });
    try {
      const env = cliEnv(slow, db.url, { POST_REPORTS_SCHEMA: 'named_runs' });
      const run = startCli(['backfill', '--from', FROM, '--to', TO], env);
      try {
        await run.waitForOutput('"msg":"report created"');
        const runId = /"runId":"([0-9a-f-]{36})"/.exec(run.stderrSoFar())?.[1] ?? '';
        const status = await runOnTerminal(['status'], env);
        expect(status.code, status.output).toBe(0);
        const name = `run ${runId.slice(0, 8)}, pid ${run.child.pid} on `;
        const [head, ...windows] = terminalLines(status.output);
        expect(head).toContain(`a run in progress (${name}`);
        expect(head).not.toContain('PostgreSQL backend');
        const claimed = windows.filter((line) => line.includes('in progress'));
        expect(claimed.length).toBeGreaterThan(0);
        for (const line of claimed) expect(line).toContain(`by ${name}`);
      } finally {
        run.child.kill('SIGINT');
        await run.done;
      }
    } finally {
      await slow.close();
    }
  });
});
