/**
 * The fault-injection soak: many runs of the built CLI against the simulator and a real PostgreSQL, each with
 * randomized faults from a printed seed. After every run the windows it recorded loaded must equal the reference
 * exactly; after each episode's final clean run, everything must. `npm run soak -- --seed N --runs M` replays.
 */
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { addDays } from '../../src/pipeline/dates.js';
import { cutWindows } from '../../src/pipeline/windows.js';
import { mixSeed, Random } from '../../src/simulator/random.js';
import { type RunningSimulator, startSimulator } from '../../src/simulator/server.js';
import { runCli } from '../helpers/cli.js';
import { cliEnv } from '../helpers/e2e-env.js';
import { compareWithReference } from '../helpers/reference-check.js';
import { drawFaultPlan, type FaultKind, NO_FAULTS } from './fault-plan.js';
import { faultyRun } from './faulty-run.js';
import { parseSoakArgs, type SoakOptions } from './soak-args.js';
import { verifyLoadedWindows } from './verify-tables.js';

interface Tally {
  runs: number;
  episodes: number;
  discrepancies: number;
  faults: Partial<Record<FaultKind, number>>;
  served: Record<string, number>;
  exits: Record<string, number>;
  backendsKilled: number;
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

function add(counts: Record<string, number>, key: string, n = 1): void {
  counts[key] = (counts[key] ?? 0) + n;
}

function exitLabel(code: number | null, signal: string | null): string {
  return code === null ? String(signal) : String(code);
}

/** Monday of a random week in 2025, so that ranges start on the default grid or cut it. */
function randomStart(random: Random): string {
  return addDays('2025-01-06', 7 * random.int(48) + random.int(7));
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
  const sim: RunningSimulator = await startSimulator({
    seed: simSeed,
    postsPerDay,
    generationDelayMs,
    token: `soak-${randomBytes(6).toString('hex')}`,
  });
  try {
    const from = randomStart(random);
    const to = addDays(from, 13 + random.int(29));
    const windowDays = random.pick([3, 7, 7, 14]);
    const concurrency = 1 + random.int(4);
    const schema = `soak_${index}`;
    const args = [
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
    const windowStarts = cutWindows(from, to, windowDays).map((w) => w.start);
    const label = `episode ${index} (sim seed ${simSeed}, ${postsPerDay}/day, ${from}..${to}, window ${windowDays}, concurrency ${concurrency})`;
    tally.episodes += 1;

    const faultyRuns = 1 + random.int(2);
    for (let r = 0; r < faultyRuns && tally.runs < options.runs - 1; r += 1) {
      const plan = drawFaultPlan(random, windowStarts);
      // After the first run most windows are loaded: a reload gives the faults something to hit.
      const reload = r > 0 && random.chance(0.7) ? ['--reload'] : [];
      const outcome = await faultyRun([...args, ...reload], env, sim, admin, plan, options.runGuardMs);
      sim.setFaults(NO_FAULTS);
      tally.runs += 1;
      for (const kind of plan.kinds) {
        const timedOnly = [
          'db-connection-killed',
          'sigkill',
          'sigterm',
          'report-expires',
          'page-token-expires',
        ];
        const fired =
          (kind === 'rate-limit-burst' ? outcome.fired.includes('set-faults') : !timedOnly.includes(kind)) ||
          (kind === 'db-connection-killed' && outcome.fired.includes('kill-db-connections')) ||
          (kind === 'sigkill' && outcome.signalled === 'SIGKILL') ||
          (kind === 'sigterm' && outcome.signalled === 'SIGTERM') ||
          ((kind === 'report-expires' || kind === 'page-token-expires') &&
            outcome.fired.includes('advance-time'));
        if (fired) tally.faults[kind] = (tally.faults[kind] ?? 0) + 1;
      }
      tally.backendsKilled += outcome.backendsKilled;
      const { code, signal } = outcome.result;
      add(tally.exits, exitLabel(code, signal));
      const problems: string[] = [];
      if (outcome.hung) problems.push(`the run was still alive after ${options.runGuardMs} ms (hang)`);
      const allowed = new Set([0, 3]);
      if (outcome.signalled === 'SIGTERM') allowed.add(130);
      if (outcome.backendsKilled > 0) allowed.add(1);
      // A signal that lands before the CLI has installed its handlers (module loading) ends it by the signal itself:
      // nothing was written yet, and the tables are checked below like after any other run.
      const diedOfSignal = outcome.signalled !== null && signal === outcome.signalled;
      if (!diedOfSignal && !allowed.has(code ?? -1)) {
        const lastError =
          outcome.result.stderr
            .split('\n')
            .filter((l) => l.includes('error'))
            .at(-1) ?? '';
        problems.push(`unexpected exit ${exitLabel(code, signal)}: ${lastError.slice(0, 400)}`);
      }
      const check = await verifyLoadedWindows(admin, schema, sim, outcome.committed);
      problems.push(...check.problems);
      const line = `run ${tally.runs}: ${label} ${r > 0 && reload.length > 0 ? 'reload ' : ''}faults [${plan.kinds.join(', ')}] fired [${outcome.fired.join(', ')}] exit ${exitLabel(code, signal)}, ${check.windows} windows loaded`;
      if (problems.length > 0) {
        tally.discrepancies += problems.length;
        tally.failures.push(`${line}\n    ${problems.slice(0, 10).join('\n    ')}`);
        console.log(`soak: FAIL ${line}\n    ${problems.slice(0, 10).join('\n    ')}`);
      } else if (options.verbose) console.log(`soak: ok ${line}`);
    }

    // The final clean run completes whatever the faulty runs left, and everything must then be exact.
    const clean = await runCli(args, env);
    tally.runs += 1;
    add(tally.exits, exitLabel(clean.code, clean.signal));
    for (const [kind, n] of Object.entries(sim.stats().faults)) add(tally.served, kind, n);
    const problems: string[] = [];
    if (clean.code !== 0) {
      const lastError =
        clean.stderr
          .split('\n')
          .filter((l) => l.includes('error'))
          .at(-1) ?? '';
      problems.push(
        `the clean run exited ${exitLabel(clean.code, clean.signal)}: ${lastError.slice(0, 400)}`,
      );
    }
    const reference = sim.referencePosts({ start_date: from, end_date: to });
    const check = await compareWithReference(admin, schema, reference);
    problems.push(...check.problems);
    if (check.posts !== reference.length)
      problems.push(`${check.posts} posts loaded, ${reference.length} expected`);
    tally.posts += check.posts;
    const line = `run ${tally.runs}: ${label} clean run, ${check.posts} posts`;
    if (problems.length > 0) {
      tally.discrepancies += problems.length;
      tally.failures.push(`${line}\n    ${problems.slice(0, 10).join('\n    ')}`);
      console.log(`soak: FAIL ${line}\n    ${problems.slice(0, 10).join('\n    ')}`);
    } else if (options.verbose) console.log(`soak: ok ${line}`);
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
    episodes: 0,
    discrepancies: 0,
    faults: {},
    served: {},
    exits: {},
    backendsKilled: 0,
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
  console.log(
    `soak: seed ${options.seed}, ${tally.episodes} episodes, ${tally.posts} posts verified after clean runs, exits ${JSON.stringify(tally.exits)}, served faults ${JSON.stringify(tally.served)}, backends killed ${tally.backendsKilled}, ${seconds} s`,
  );
  console.log(
    `soak: ${tally.runs} runs, faults ${JSON.stringify(tally.faults)}, discrepancies ${tally.discrepancies}`,
  );
  return tally.discrepancies === 0 ? 0 : 1;
}

process.exitCode = await main();
