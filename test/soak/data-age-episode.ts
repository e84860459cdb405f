/**
 * The data-age episode of the soak: windows of several extents on one schema over time, as the API's reuse rule
 * and overlapping windows make them. Weeks (7-day windows), days (1-day windows) and a sync's cut mid-week
 * (Monday..Wednesday) are loaded and reloaded in random order, between late data, runs killed while their report
 * generates, and hours passing across midnight within the reuse period; the connector's clock (POST_REPORTS_NOW)
 * moves with the simulator's. The ledger is kept by day, so that a day of any window must hold one epoch's
 * figures, never older than the figures it held before: nothing older ever replaces anything newer.
 *
 * The episode ends with a plain run after the reuse period, whose loads must hold the current truth, and a
 * --reload after which every day does.
 */
import type pg from 'pg';
import { addDays } from '../../src/model/dates.js';
import type { Random } from '../../src/simulator/random.js';
import { startSimulator } from '../../src/simulator/server.js';
import { type CliResult, runCli, startCli } from '../helpers/cli.js';
import { cliEnv } from '../helpers/e2e-env.js';
import { comparePosts, readTables } from '../helpers/reference-check.js';
import { exitLabel, lastError } from './exits.js';
import { ownGrid } from './spec-grid.js';
import { Ledger } from './verify-tables.js';

const HOUR_MS = 3_600_000;
/** Past the API's report reuse period (3 h). */
const PAST_REUSE_MS = 3 * HOUR_MS + 60_000;

const MOVES = ['week', 'days', 'midweek', 'kill', 'revise', 'hours'] as const;
type Move = (typeof MOVES)[number];

/** One run of the episode, for the soak's tally and report. */
export interface DataAgeRun {
  readonly line: string;
  readonly result: CliResult;
  readonly problems: string[];
}

export interface DataAgeEpisode {
  readonly label: string;
  readonly runs: DataAgeRun[];
  /** Posts in the tables after the final run. */
  readonly posts: number;
}

/** The windows a run's log says it committed, as days. */
function committedDays(result: CliResult): Set<string> {
  const days = new Set<string>();
  for (const line of result.stderr.split('\n')) {
    if (!line.includes('"windows committed"')) continue;
    const windows = (JSON.parse(line) as { windows?: string[] }).windows ?? [];
    for (const label of windows) {
      const [start, end] = label.split('..');
      if (start === undefined || end === undefined) continue;
      for (let d = start; d <= end; d = addDays(d, 1)) days.add(d);
    }
  }
  return days;
}

export async function dataAgeEpisode(
  index: number,
  random: Random,
  databaseUrl: string,
  admin: pg.Pool,
  env: Record<string, string>,
): Promise<DataAgeEpisode> {
  const simSeed = random.int(1_000_000);
  const postsPerDay = 5 + random.int(21);
  const sim = await startSimulator({
    seed: simSeed,
    postsPerDay,
    // Long enough for a kill to land while a report generates.
    generationDelayMs: 300,
    pageSize: Math.max(5, postsPerDay * 2),
  });
  const weeks = 2 + random.int(2);
  const from = addDays('2025-01-06', 7 * random.int(48));
  const to = addDays(from, 7 * weeks - 1);
  const schema = `soak_age_${index}`;
  // The last day is today when the episode begins, late in the evening: its week is open.
  let nowMs = Date.parse(`${to}T${20 + random.int(4)}:${random.pick(['00', '30'])}:00Z`);
  const label = `data-age episode ${index} (sim seed ${simSeed}, ${postsPerDay}/day, ${from}..${to})`;
  const ledger = new Ledger(sim, schema, { from, to }, ownGrid(from, to, 1));
  const runs: DataAgeRun[] = [];
  const days: string[] = [];
  for (let d = from; d <= to; d = addDays(d, 1)) days.push(d);

  const passTime = (ms: number): void => {
    sim.advanceTime(ms);
    nowMs += ms;
  };
  const runEnv = (): Record<string, string> => ({
    ...cliEnv(sim, databaseUrl, env),
    POST_REPORTS_SCHEMA: schema,
    POST_REPORTS_NOW: new Date(nowMs).toISOString(),
  });
  const backfill = (start: string, end: string, windowDays: number, reload: boolean): string[] => [
    'backfill',
    '--from',
    start,
    '--to',
    end,
    '--window-days',
    String(windowDays),
    '--concurrency',
    String(1 + random.int(3)),
    ...(reload ? ['--reload'] : []),
  ];
  const judge = async (line: string, result: CliResult, allowed: readonly number[]): Promise<string[]> => {
    const problems: string[] = [];
    const killed = result.signal === 'SIGKILL';
    if (!killed && !allowed.includes(result.code ?? -1)) {
      problems.push(`exit ${exitLabel(result.code, result.signal)}: ${lastError(result)}`);
    }
    problems.push(...(await ledger.check(admin, new Set())).problems);
    runs.push({ line: `${label}: ${line}`, result, problems });
    return problems;
  };

  try {
    const moves = 4 + random.int(5);
    for (let m = 0; m < moves; m++) {
      const move: Move = m === 0 ? 'week' : random.pick(MOVES);
      const reload = random.chance(0.5);
      switch (move) {
        case 'week': {
          const args = backfill(from, to, 7, reload);
          await judge(args.join(' '), await runCli(args, runEnv()), [0, 3]);
          break;
        }
        case 'days': {
          const first = random.int(days.length);
          const last = Math.min(days.length - 1, first + random.int(4));
          const args = backfill(days[first] ?? from, days[last] ?? to, 1, reload);
          await judge(args.join(' '), await runCli(args, runEnv()), [0, 3]);
          break;
        }
        case 'midweek': {
          // A sync on a Wednesday cuts its week as Monday..Wednesday.
          const wednesday = addDays(from, 7 * random.int(weeks) + 2);
          const args = backfill(from, wednesday, 7, true);
          await judge(`${args.join(' ')} (a sync's cut)`, await runCli(args, runEnv()), [0, 3]);
          break;
        }
        case 'kill': {
          const week = random.chance(0.5);
          const args = week ? backfill(from, to, 7, true) : backfill(days[0] ?? from, days[2] ?? to, 1, true);
          const run = startCli(args, { ...runEnv(), LOG_LEVEL: 'debug' });
          const created = run.waitForOutput('report created');
          const ended = run.done.then(() => 'ended' as const);
          if ((await Promise.race([created, ended])) !== 'ended') run.child.kill('SIGKILL');
          await judge(`${args.join(' ')} killed while a report generates`, await run.done, [0, 3]);
          break;
        }
        case 'revise':
          ledger.revise([random.pick(days), random.pick(days)]);
          break;
        case 'hours':
          // Within the reuse period, and often across midnight from the evening the episode began.
          passTime(HOUR_MS / 2 + (random.int(5) * HOUR_MS) / 2);
          break;
      }
    }

    // After the reuse period a plain run loads what is open or missing: from new reports, the current truth.
    passTime(PAST_REUSE_MS);
    const plainArgs = backfill(from, to, 7, false);
    const plain = await runCli(plainArgs, runEnv());
    const plainProblems = await judge(`${plainArgs.join(' ')} (plain, after the reuse period)`, plain, [0]);
    const loaded = committedDays(plain);
    if (loaded.size > 0) {
      const tables = await readTables(admin, schema);
      const range = { start: from, end: to };
      const current = ledger.truth(ledger.epoch, range).filter((p) => loaded.has(p.date));
      const inLoaded = new Set(ledger.truth(0, range).flatMap((p) => (loaded.has(p.date) ? [p.id] : [])));
      const behind = comparePosts(
        tables,
        current,
        [...tables.rows.keys()].filter((id) => inLoaded.has(id)),
      );
      if (behind.length > 0) {
        plainProblems.push(
          `the plain run's loads do not hold the current truth: ${behind.slice(0, 5).join('; ')}`,
        );
      }
    }

    const reloadArgs = backfill(from, to, 7, true);
    const final = await runCli(reloadArgs, runEnv());
    const check = await ledger.checkComplete(admin);
    const problems: string[] = [];
    if (final.code !== 0) problems.push(`exit ${exitLabel(final.code, final.signal)}: ${lastError(final)}`);
    problems.push(...check.problems);
    runs.push({ line: `${label}: ${reloadArgs.join(' ')} (final)`, result: final, problems });
    return { label, runs, posts: check.posts };
  } finally {
    await sim.close();
  }
}
