/**
 * The fault-injection soak: many runs of the built CLI against the simulator and a real PostgreSQL, each with
 * randomized faults from a printed seed. After every run the tables are checked against the checker's own
 * ledger (verify-tables.ts); after each episode's final clean run, every window must hold the simulator's
 * current truth. A fault counts only when it was served. `npm run soak -- --seed N --runs M` replays.
 */
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { addDays } from '../../src/model/dates.js';
import { cutWindows } from '../../src/pipeline/windows.js';
import { mixSeed, Random } from '../../src/simulator/random.js';
import { type RunningSimulator, startSimulator } from '../../src/simulator/server.js';
import { type CliResult, runCli } from '../helpers/cli.js';
import { cliEnv } from '../helpers/e2e-env.js';
import { drawFaultPlan, FAULT_KINDS, NO_FAULTS } from './fault-plan.js';
import { FaultTally } from './fault-tally.js';
import { faultyRun } from './faulty-run.js';
import { parseSoakArgs, type SoakOptions } from './soak-args.js';
import { Ledger, type LedgerCheck } from './verify-tables.js';

interface Tally {
  runs: number;
  faultyRuns: number;
  recoveryRuns: number;
  episodes: number;
  discrepancies: number;
  faults: FaultTally;
  exits: Record<string, number>;
  posts: number;
  failures: string[];
}

const CLEAN_ENV = {
  LOG_LEVEL: 'debug',
  POST_REPORTS_WINDOW_ATTEMPTS: '3',
  POST_REPORTS_MAX_ATTEMPTS: '10',
  POST_REPORTS_REQUEST_TIMEOUT_MS: '5000',
  POST_REPORTS_STALL_TIMEOUT_MS: '30000',
  // A killed run's lock dies with its connection; a run after it may have to wait for PostgreSQL to notice.
  POST_REPORTS_LOCK_WAIT_MS: '15000',
};

/** Past the API's report reuse period (3 h), on the simulator's clock: a re-run creates new reports. */
const PAST_REUSE_MS = 3 * 3_600_000 + 60_000;

function add(counts: Record<string, number>, key: string, n = 1): void {
  counts[key] = (counts[key] ?? 0) + n;
}

function exitLabel(code: number | null, signal: string | null): string {
  return code === null ? String(signal) : String(code);
}

function lastError(result: CliResult): string {
  return (
    result.stderr
      .split('\n')
      .filter((l) => l.includes('error'))
      .at(-1) ?? ''
  ).slice(0, 400);
}

/** Monday of a random week in 2025, so that ranges start on the default grid or cut it. */
function randomStart(random: Random): string {
  return addDays('2025-01-06', 7 * random.int(48) + random.int(7));
}

function report(tally: Tally, options: SoakOptions, line: string, problems: readonly string[]): void {
  if (problems.length > 0) {
    tally.discrepancies += problems.length;
    const text = `${line}\n    ${problems.slice(0, 10).join('\n    ')}`;
    tally.failures.push(text);
    console.log(`soak: FAIL ${text}`);
  } else if (options.verbose) console.log(`soak: ok ${line}`);
}

/** Exit codes a faulty run may end with, given what struck it. */
function allowedExits(signalled: string | null, backendsKilled: number): Set<number> {
  const allowed = new Set([0, 3]);
  if (signalled === 'SIGTERM') allowed.add(130);
  if (backendsKilled > 0) allowed.add(1);
  return allowed;
}

async function episode(
  index: number,
  random: Random,
  options: SoakOptions,
  databaseUrl: string,
  admin: pg.Pool,
  tally: Tally,
): Promise<void> {
  const simSeed = random.int(1_000_000);
  const postsPerDay = 20 + random.int(81);
  const generationDelayMs = random.pick([0, 30, 100, 300]);
  const windowDays = random.pick([3, 7, 7, 14]);
  // Pages small enough for three to nine a window: page tokens and reports can expire or vanish mid-window.
  const pageSize = Math.max(5, Math.floor((postsPerDay * windowDays) / (3 + random.int(7))));
  const sim: RunningSimulator = await startSimulator({
    seed: simSeed,
    postsPerDay,
    generationDelayMs,
    pageSize,
    token: `soak-${randomBytes(6).toString('hex')}`,
  });
  try {
    const from = randomStart(random);
    const to = addDays(from, 13 + random.int(29));
    const concurrency = 1 + random.int(4);
    const schema = `soak_${index}`;
    const base = [
      'backfill',
      '--from',
      from,
      '--to',
      to,
      '--window-days',
      String(windowDays),
      '--concurrency',
      String(concurrency),
      '--schema',
      schema,
    ];
    const env = cliEnv(sim, databaseUrl, CLEAN_ENV);
    const grid = cutWindows(from, to, windowDays);
    const windowStarts = grid.map((w) => w.start);
    const dates: string[] = [];
    for (let d = from; d <= to; d = addDays(d, 1)) dates.push(d);
    const ledger = new Ledger(sim, schema, { from, to }, grid);
    const label = `episode ${index} (sim seed ${simSeed}, ${postsPerDay}/day, pages of ${pageSize}, ${from}..${to}, window ${windowDays}, concurrency ${concurrency})`;
    tally.episodes += 1;
    let filterArgs: string[] = [];

    const faultyRuns = 1 + random.int(3);
    for (let r = 0; r < faultyRuns && tally.runs < options.runs - 1; r += 1) {
      // Each kind in turn is the run's primary fault: a soak of any size plans every kind.
      const primary = FAULT_KINDS[tally.faultyRuns % FAULT_KINDS.length] ?? 'slow-responses';
      const plan = drawFaultPlan(random, { windowStarts, dates }, primary, {
        canReset: filterArgs.length === 0,
      });
      tally.faultyRuns += 1;
      tally.faults.planned(plan.kinds);
      // Re-runs come after the reuse period, so that report failures and expiries strike them too.
      if (r > 0 && random.chance(0.7)) sim.advanceTime(PAST_REUSE_MS);
      if (plan.reviseDates.length > 0) {
        ledger.revise(plan.reviseDates);
        sim.advanceTime(PAST_REUSE_MS);
      }
      const lateData = plan.reviseDates.length > 0;
      // After the first run most windows are loaded: a reload gives the faults something to strike.
      const reload = lateData || r > 0 ? ['--reload'] : [];
      let resetArgs: string[] = [];
      let brands: string[] = [];
      if (plan.kinds.includes('filter-reset')) {
        const names = [
          ...new Set(ledger.truth(0, { start: from, end: to }).map((p) => String(p.fields.brand))),
        ]
          .filter((name) => !name.includes(','))
          .sort();
        brands = [random.pick(names), random.pick(names)].filter((b, i, all) => all.indexOf(b) === i);
        resetArgs = ['--brands', brands.join(','), '--reset'];
      }
      const args = [...base, ...(resetArgs.length > 0 ? resetArgs : filterArgs), ...reload];
      const runStarted = Date.now();
      const outcome = await faultyRun(args, env, sim, admin, plan, options.runGuardMs);
      const runMs = Date.now() - runStarted;
      sim.setFaults(NO_FAULTS);
      tally.runs += 1;
      const { code, signal } = outcome.result;
      add(tally.exits, exitLabel(code, signal));
      if (outcome.signalled !== null) tally.faults.served({ [outcome.signalled.toLowerCase()]: 1 });
      tally.faults.served({ 'db-backends-killed': outcome.backendsKilled });
      const problems: string[] = [];
      if (resetArgs.length > 0) {
        if (outcome.result.summary?.reset !== undefined) {
          ledger.reset(brands);
          filterArgs = ['--brands', brands.join(',')];
          tally.faults.served({ 'filter-reset': 1 });
        } else problems.push('the --reset run printed no reset in its summary');
      }
      if (outcome.hung) problems.push(`the run was still alive after ${options.runGuardMs} ms (hang)`);
      // A signal that lands before the CLI has installed its handlers (module loading) ends it by the signal itself:
      // nothing was written yet, and the tables are checked below like after any other run.
      const diedOfSignal = outcome.signalled !== null && signal === outcome.signalled;
      const allowed = allowedExits(outcome.signalled, outcome.backendsKilled);
      if (!diedOfSignal && !allowed.has(code ?? -1)) {
        problems.push(`unexpected exit ${exitLabel(code, signal)}: ${lastError(outcome.result)}`);
      }
      const check = await ledger.check(admin, outcome.committed);
      problems.push(...check.problems);
      report(
        tally,
        options,
        `run ${tally.runs}: ${label} ${args.slice(11).join(' ')} faults [${plan.kinds.join(', ')}] fired [${outcome.fired.join(', ')}] exit ${exitLabel(code, signal)} in ${runMs} ms, ${check.windows} windows in the ledger`,
        problems,
      );

      // A run that lost its database (exit 1) is followed by a run without faults, whose result is checked.
      if (code === 1 && tally.runs < options.runs - 1) {
        const recovery = await runCli([...base, ...filterArgs], env);
        tally.runs += 1;
        tally.recoveryRuns += 1;
        add(tally.exits, exitLabel(recovery.code, recovery.signal));
        const after = await ledger.check(admin, new Set());
        const recoveryProblems = [...after.problems];
        if (recovery.code !== 0) {
          recoveryProblems.push(
            `the recovery run exited ${exitLabel(recovery.code, recovery.signal)}: ${lastError(recovery)}`,
          );
        }
        report(tally, options, `run ${tally.runs}: ${label} recovery run`, recoveryProblems);
      }
    }

    // The final clean run completes whatever the faulty runs left. After late data, a run that resumed an
    // attempt begun before the revision loaded that report's figures, as it should: a clean --reload then
    // brings every window to the current truth.
    const finals = ledger.epoch > 0 ? [[], ['--reload']] : [[]];
    let check: LedgerCheck = { problems: [], windows: 0, posts: 0 };
    for (const [i, extra] of finals.entries()) {
      const clean = await runCli([...base, ...filterArgs, ...extra], env);
      tally.runs += 1;
      add(tally.exits, exitLabel(clean.code, clean.signal));
      const problems: string[] = [];
      if (clean.code !== 0) {
        problems.push(`the clean run exited ${exitLabel(clean.code, clean.signal)}: ${lastError(clean)}`);
      }
      check =
        i === finals.length - 1 ? await ledger.checkComplete(admin) : await ledger.check(admin, new Set());
      problems.push(...check.problems);
      report(
        tally,
        options,
        `run ${tally.runs}: ${label} clean run ${extra.join(' ')}, ${check.posts} posts`,
        problems,
      );
    }
    tally.posts += check.posts;
    tally.faults.served(sim.stats().faults);
  } finally {
    await sim.close();
  }
}

async function main(): Promise<number> {
  const options = parseSoakArgs(process.argv.slice(2), process.env);
  console.log(
    `soak: seed ${options.seed}, ${options.runs} runs (replay: npm run soak -- --seed ${options.seed} --runs ${options.runs})`,
  );
  const started = Date.now();
  const name = `etl_soak_${Date.now().toString(36)}_${randomBytes(3).toString('hex')}`;
  const server = new pg.Client({ connectionString: options.databaseUrl });
  await server.connect();
  await server.query(`CREATE DATABASE ${pg.escapeIdentifier(name)}`);
  const url = new URL(options.databaseUrl);
  url.pathname = `/${name}`;
  const admin = new pg.Pool({ connectionString: url.toString(), max: 2, application_name: 'etl-soak' });
  admin.on('error', () => {});
  const tally: Tally = {
    runs: 0,
    faultyRuns: 0,
    recoveryRuns: 0,
    episodes: 0,
    discrepancies: 0,
    faults: new FaultTally(),
    exits: {},
    posts: 0,
    failures: [],
  };
  try {
    const random = new Random(mixSeed(options.seed, 0x50a4));
    for (let i = 0; tally.runs < options.runs; i += 1) {
      await episode(i, random, options, url.toString(), admin, tally);
    }
  } finally {
    await admin.end();
    await server.query(`DROP DATABASE IF EXISTS ${pg.escapeIdentifier(name)} WITH (FORCE)`);
    await server.end();
  }
  const seconds = Math.round((Date.now() - started) / 1000);
  const neverServed = tally.faults.neverServed();
  console.log(
    `soak: seed ${options.seed}, ${tally.runs} runs (${tally.faultyRuns} with faults, ${tally.recoveryRuns} recovery runs after exit 1) in ${tally.episodes} episodes, ${seconds} s`,
  );
  console.log(`soak: exits ${JSON.stringify(tally.exits)}`);
  console.log(
    'soak: faults planned and served (served: counted by the simulator, or done by the harness to a live run)',
  );
  for (const line of tally.faults.table()) console.log(line);
  for (const line of neverServed) console.log(`soak: FAIL ${line}`);
  console.log(
    `soak: ${tally.posts} posts verified after the final clean runs, discrepancies ${tally.discrepancies} (against the ledger after every run, the current truth at the end)`,
  );
  return tally.discrepancies === 0 && neverServed.length === 0 ? 0 : 1;
}

process.exitCode = await main();
