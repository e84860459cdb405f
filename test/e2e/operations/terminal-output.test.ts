import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunSummary } from '../../../src/pipeline/run-summary.js';
import { type RunningSimulator, startSimulator } from '../../../src/simulator/server.js';
import { runCli } from '../../helpers/cli.js';
import { createTestDatabase } from '../../helpers/database.js';
import { cliEnv } from '../../helpers/e2e-env.js';
import { runOnTerminal, terminalLines, terminalSummary } from '../../helpers/terminal.js';

const db = await createTestDatabase();
let sim: RunningSimulator;
const FROM = '2026-10-01';
const TO = '2026-10-28';

beforeAll(async () => {
  sim = await startSimulator({ seed: 44, postsPerDay: 10 });
});
afterAll(async () => {
  await sim.close();
});

/** What a person reads on a terminal (the environment asks for no log format: the CLI chooses). */
function terminalEnv(schema: string): Record<string, string> {
  return { ...cliEnv(sim, db.url, { POST_REPORTS_SCHEMA: schema }), LOG_FORMAT: 'auto' };
}

describe('a terminal gets a compact log, the bar and a closing sentence (the built CLI on a pseudo-terminal)', () => {
  it('--log-level INFO: one line an event, no repeated run fields, and a sentence a person reads at the end', async () => {
    const result = await runOnTerminal(
      ['backfill', '--from', FROM, '--to', TO, '--log-level', 'INFO', '--json'],
      terminalEnv('on_terminal'),
    );
    expect(result.code, result.output).toBe(0);
    const shown = terminalLines(result.output);
    // No event spreads over several lines (pino-pretty indents an event's fields under it).
    expect(shown.filter((line) => /^\s{4}\S/.test(line))).toEqual([]);
    // The log lines, the summary line for the scheduler aside.
    const log = shown.filter((line) => !line.startsWith('{"command"'));
    expect(log.filter((line) => line.includes('runId'))).toEqual([]);
    expect(log.filter((line) => /command[":= ]+"?backfill/.test(line))).toEqual([]);
    // The columns added are a line a step (the documented fields' before the first page, then those it does not
    // name), their count; the summary is not logged a second time.
    expect(shown.filter((line) => line.includes('new fields'))).toHaveLength(2);
    expect(shown.filter((line) => line.includes('run finished') && line.includes('"windows"'))).toEqual([]);
    const summary = terminalSummary(result.output) as unknown as RunSummary;
    expect(summary).toMatchObject({ status: 'succeeded', windows: { loaded: 5 } });
    expect(result.output).toContain(
      `Loaded ${summary.posts} posts in 5 windows, ${FROM} to ${TO} into schema on_terminal (organization default) of ${new URL(db.url).host}${new URL(db.url).pathname}, in ${(summary.durationMs / 1000).toFixed(1)} s.`,
    );
  });

  it('--quiet: no log lines, no bar, no sentence; the summary line stays', async () => {
    const result = await runOnTerminal(
      ['backfill', '--from', FROM, '--to', TO, '--quiet', '--reload', '--json'],
      terminalEnv('quiet_terminal'),
    );
    expect(result.code, result.output).toBe(0);
    const shown = terminalLines(result.output);
    expect(shown).toHaveLength(1);
    expect(terminalSummary(result.output)).toMatchObject({ status: 'succeeded' });
  });

  it('JSON logs when asked for on a terminal, and when piped', async () => {
    const asked = await runOnTerminal(['backfill', '--from', FROM, '--to', TO], {
      ...terminalEnv('json_terminal'),
      LOG_FORMAT: 'json',
    });
    expect(asked.code, asked.output).toBe(0);
    expect(terminalLines(asked.output).some((line) => line.startsWith('{"level":30'))).toBe(true);
    expect(asked.output).not.toContain('Loaded ');

    const piped = await runCli(['backfill', '--from', FROM, '--to', TO], terminalEnv('piped'));
    expect(piped.code, piped.stderr).toBe(0);
    for (const line of piped.stderr.trim().split('\n')) expect(() => JSON.parse(line), line).not.toThrow();
    expect(piped.stderr).not.toContain('Loaded ');
  });
});
