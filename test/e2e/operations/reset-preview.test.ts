import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { addDays } from '../../../src/model/dates.js';
import { type RunningSimulator, startSimulator } from '../../../src/simulator/server.js';
import { runCli } from '../../helpers/cli.js';
import { createTestDatabase } from '../../helpers/database.js';
import { cliEnv } from '../../helpers/e2e-env.js';
import { snapshotSchema } from '../../helpers/reference-check.js';
import { summaryOf } from '../../helpers/summary.js';
import { runOnTerminal, terminalSummary } from '../../helpers/terminal.js';
import { TODAY, testNow } from '../../helpers/today.js';

const db = await createTestDatabase();
let sim: RunningSimulator;
const FROM = addDays(TODAY, -30);
const TO = addDays(TODAY, -10);
const PROMPT = 'Remove them and start over? [y/N]';

beforeAll(async () => {
  sim = await startSimulator({ seed: 28, postsPerDay: 10, now: testNow() });
});
afterAll(async () => {
  await sim.close();
});

/** Loads FROM..TO into `schema`; returns its windows and posts. */
async function load(schema: string): Promise<{ windows: number; posts: number }> {
  const run = await runCli(
    ['backfill', '--from', FROM, '--to', TO],
    cliEnv(sim, db.url, { POST_REPORTS_SCHEMA: schema }),
  );
  expect(run.code, run.stderr).toBe(0);
  const summary = summaryOf(run);
  return { windows: summary.windows.loaded, posts: summary.posts };
}

describe('--reset says what it removes before it does (the built CLI)', () => {
  it('plan --reset shows what a reset would remove and the windows it would load, and removes nothing', async () => {
    const schema = 'planned_reset';
    const loaded = await load(schema);
    const before = await snapshotSchema(db.pool, schema);
    const plan = await runCli(
      ['plan', '--from', FROM, '--to', TO, '--reset'],
      cliEnv(sim, db.url, { POST_REPORTS_SCHEMA: schema }),
    );
    expect(plan.code, plan.stderr).toBe(0);
    const lines = plan.stdout
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as Record<string, unknown>);
    expect(lines[0]).toEqual({
      reset: {
        schema,
        organization: 'default',
        windows: loaded.windows,
        posts: loaded.posts,
        from: FROM,
        to: TO,
        cursor: null,
      },
    });
    // As a reset run would: every window of the range is loaded again, its standing shown as it is now.
    expect(lines.length).toBeGreaterThan(1);
    for (const window of lines.slice(1)) expect(window).toMatchObject({ state: 'loaded', load: true });
    expect(await snapshotSchema(db.pool, schema)).toBe(before);
  });

  it('a scheduled run (no terminal) says what it removes, then removes it only with --yes', async () => {
    const schema = 'scheduled_reset';
    const env = cliEnv(sim, db.url, { POST_REPORTS_SCHEMA: schema });
    const first = await runCli(['sync', '--start-date', FROM], env);
    expect(first.code, first.stderr).toBe(0);
    const loaded = summaryOf(first);
    const refused = await runCli(['backfill', '--from', addDays(TO, -3), '--to', TO, '--reset'], env);
    expect(refused.code, refused.stderr).toBe(2);
    expect(refused.stderr).toContain('add --yes to remove them (nothing was removed)');
    const run = await runCli(['backfill', '--from', addDays(TO, -3), '--to', TO, '--reset', '--yes'], env);
    expect(run.code, run.stderr).toBe(0);
    const line = `post-reports-etl: --reset removes from schema "${schema}" every loaded window, whatever its dates: ${loaded.windows.loaded} windows (${loaded.posts} posts, ${FROM} to ${TODAY}), and the cursor (${TODAY})`;
    expect(run.stderr).toContain(line);
    expect(run.stderr.indexOf(line)).toBeLessThan(run.stderr.indexOf('starting over'));
    expect(run.stderr).not.toContain(PROMPT);
    expect(summaryOf(run).reset).toEqual({ windows: loaded.windows.loaded, posts: loaded.posts });
  });

  it('on a terminal it asks: "n" removes nothing (exit 2), "y" starts over, --yes does not ask', async () => {
    const schema = 'asked_reset';
    const env = cliEnv(sim, db.url, { POST_REPORTS_SCHEMA: schema });
    const loaded = await load(schema);
    const before = await snapshotSchema(db.pool, schema);
    const reset = ['backfill', '--from', FROM, '--to', TO, '--reset', '--json'];

    const declined = await runOnTerminal(reset, env, { answer: { after: PROMPT, text: 'n\r' } });
    expect(declined.code, declined.output).toBe(2);
    expect(declined.output).toContain(
      `--reset removes from schema "${schema}" every loaded window, whatever its dates: ${loaded.windows} windows (${loaded.posts} posts, ${FROM} to ${TO}), and no cursor`,
    );
    expect(declined.output).toContain('post-reports-etl: error: --reset declined: nothing was removed');
    expect(terminalSummary(declined.output)).toMatchObject({
      status: 'invalid',
      exitCode: 2,
      error: { code: 'RESET_DECLINED' },
    });
    expect(await snapshotSchema(db.pool, schema)).toBe(before);

    const accepted = await runOnTerminal(reset, env, { answer: { after: PROMPT, text: 'y\r' } });
    expect(accepted.code, accepted.output).toBe(0);
    expect(terminalSummary(accepted.output)).toMatchObject({
      status: 'succeeded',
      reset: { windows: loaded.windows, posts: loaded.posts },
    });

    const yes = await runOnTerminal([...reset, '--yes'], env);
    expect(yes.code, yes.output).toBe(0);
    expect(yes.output).not.toContain(PROMPT);
    expect(yes.output).toContain(`--reset removes from schema "${schema}"`);
    expect(terminalSummary(yes.output)).toMatchObject({ status: 'succeeded' });
  });
});
