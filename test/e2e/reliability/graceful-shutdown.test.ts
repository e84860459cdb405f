import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, describe, expect, it } from 'vitest';
import {
  type GateScope,
  type RunningSimulator,
  type SimulatorOptions,
  startSimulator,
} from '../../../src/simulator/server.js';
import { type CliRun, runCli, startCli } from '../../helpers/cli.js';
import { createTestDatabase } from '../../helpers/database.js';
import { cliEnv } from '../../helpers/e2e-env.js';
import { compareWithReference, snapshotSchema } from '../../helpers/reference-check.js';

const db = await createTestDatabase();
const sims: RunningSimulator[] = [];
afterAll(async () => {
  for (const sim of sims) await sim.close();
});

/** The loaded data (not the run state, which records the interrupted attempt). */
async function dataSnapshot(schema: string): Promise<string> {
  const all = await snapshotSchema(db.pool, schema);
  return all
    .split('\n\n')
    .filter((part) => /^(posts|post_custom_segments|field_columns|sync_state): /.test(part))
    .join('\n\n');
}

/** Harness guard only: a child still running after this is a hang, and fails the test. */
async function endsWithin(run: CliRun, ms: number) {
  const guard = sleep(ms).then(() => 'hung' as const);
  const outcome = await Promise.race([run.done, guard]);
  if (outcome === 'hung') run.child.kill('SIGKILL');
  return outcome;
}

interface Phase {
  readonly name: string;
  readonly sim: SimulatorOptions;
  /** Debug log message after which the run is in the phase. */
  readonly after: string;
  readonly windowDays: string;
  /** The answers the simulator holds until the signal has landed. */
  readonly hold?: { readonly scope: GateScope; readonly after: number };
}

const FROM = '2025-04-07';
const TO = '2025-04-20';

const phases: Phase[] = [
  // The simulator holds the first creation call: the window has started, its creation request is in flight.
  {
    name: 'creating',
    sim: { seed: 31, postsPerDay: 30 },
    after: '"msg":"window started"',
    windowDays: '7',
    hold: { scope: 'creation', after: 0 },
  },
  {
    name: 'polling',
    // The interrupted run talks to a twin simulator whose reports take an hour: nothing of it is ever loaded.
    sim: { seed: 32, postsPerDay: 30, generationDelayMs: 3_600_000 },
    after: '"msg":"report created"',
    windowDays: '7',
  },
  // The simulator holds every page after the first: a page is staged, the next one is in flight.
  {
    name: 'paging',
    sim: { seed: 33, postsPerDay: 200 },
    after: '"msg":"page staged"',
    windowDays: '14',
    hold: { scope: 'page', after: 1 },
  },
];

describe('graceful shutdown: SIGTERM in every phase (the built CLI)', () => {
  for (const phase of phases) {
    it(`ends with 130 while ${phase.name}, releases the lock and leaves the loaded data as it was`, async () => {
      const slow = phase.sim.generationDelayMs !== undefined;
      const sim = await startSimulator(slow ? { ...phase.sim, generationDelayMs: 0 } : phase.sim);
      sims.push(sim);
      const schema = `term_${phase.name}`;
      const args = [
        'backfill',
        '--from',
        FROM,
        '--to',
        TO,
        '--window-days',
        phase.windowDays,
        '--schema',
        schema,
      ];
      const first = await runCli(args, cliEnv(sim, db.url));
      expect(first.code, first.stderr).toBe(0);
      const before = await dataSnapshot(schema);
      expect(before).toContain('posts: {');

      // The reload replaces the loaded windows: the interrupted one must leave them as they were.
      // Another seed: report ids come from the seed, and a report of the first simulator that bore the id of the
      // twin's report for another window would be resumed for this one by the run that completes the reload.
      const twin = slow ? await startSimulator({ ...phase.sim, seed: (phase.sim.seed ?? 1) + 1000 }) : sim;
      if (twin !== sim) sims.push(twin);
      const env = cliEnv(twin, db.url, { LOG_LEVEL: 'debug' });
      sim.advanceTime(4 * 3_600_000);
      const gate = phase.hold === undefined ? null : sim.holdAnswers(phase.hold.scope, phase.hold.after);
      const run = startCli([...args, '--reload'], env);
      await run.waitForOutput(phase.after);
      await gate?.held;
      run.child.kill('SIGTERM');
      const outcome = await endsWithin(run, 10_000);
      gate?.release();
      expect(outcome, `still running 10 s after SIGTERM while ${phase.name}`).not.toBe('hung');
      const result = await run.done;
      expect(result.code, result.stderr.slice(-2000)).toBe(130);
      expect(result.summary).toMatchObject({ status: 'interrupted', exitCode: 130 });
      expect(await dataSnapshot(schema)).toBe(before);

      // The lock was released: a run that may not wait starts at once, and completes the reload exactly.
      const next = await runCli(
        [...args, '--reload'],
        cliEnv(sim, db.url, { POST_REPORTS_LOCK_WAIT_MS: '0' }),
      );
      expect(next.code, next.stderr.slice(-2000)).toBe(0);
      const reference = sim.referencePosts({ start_date: FROM, end_date: TO });
      expect((await compareWithReference(db.pool, schema, reference)).problems).toEqual([]);
    });
  }
});
