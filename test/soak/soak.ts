/**
 * The fault-injection soak: many runs of the built CLI against the simulator and a real PostgreSQL, each with
 * randomized faults from a printed seed. After every run the tables are checked against the checker's own
 * ledger (verify-tables.ts); after each episode's final clean run, every window must hold the simulator's
 * current truth. A fault counts for a run only when it was served to that run, and its triggers are what the
 * simulator served, never a timer. `npm run soak -- --seed N --runs M` replays.
 *
 * With --concurrent, each faulty run starts 2 to 4 processes at the same moment on the episode's schema
 * (concurrent-plan.ts, concurrent-run.ts): a window may be loaded by any of them, and the tables are checked
 * against the ledger all the same; the API calls go through a recording proxy, one port per process, which tells
 * whether two processes ever worked on one window at once.
 *
 * With --organizations, each episode's schema is loaded by several organizations, each with its own token, and
 * every run is checked organization by organization (organization-episode.ts). With --organizations-file, the
 * same, but a run of several organizations is one process loading them all through `--organizations FILE`.
 */
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { commitLockKey } from '../../src/load/locks.js';
import { addDays, todayUtc } from '../../src/model/dates.js';
import type { Window } from '../../src/model/window.js';
import { EXIT } from '../../src/pipeline/exit-codes.js';
import { mixSeed, Random } from '../../src/simulator/random.js';
import { type RunningSimulator, startSimulator } from '../../src/simulator/server.js';
import { runCli } from '../helpers/cli.js';
import { cliEnv } from '../helpers/e2e-env.js';
import { type ConcurrentPlan, drawConcurrentPlan } from './concurrent-plan.js';
import { concurrentRun, describeProcesses } from './concurrent-run.js';
import { dataAgeEpisode } from './data-age-episode.js';
import { CLEAN_ENV, episodeStart, PAST_REUSE_MS, randomStart } from './episode-settings.js';
import { allowedExits, exitLabel, lastError, summaryProblem } from './exits.js';
import { drawFaultPlan, FAULT_KINDS, type FaultPlan, NO_FAULTS, SHARED_RUN_KINDS } from './fault-plan.js';
import { FaultTally } from './fault-tally.js';
import { faultyRun } from './faulty-run.js';
import { organizationEpisode } from './organization-episode.js';
import { RecordingProxy } from './recording-proxy.js';
import { drawService } from './service-draw.js';
import { type PhaseOptions, parseSoakArgs } from './soak-args.js';
import {
  add,
  type ConcurrentTally,
  newTally,
  type OrganizationTally,
  plannedRuns,
  report,
  type Tally,
} from './soak-tally.js';
import { ownGrid } from './spec-grid.js';
import { Ledger, type LedgerCheck } from './verify-tables.js';

/** Proxy ports of a concurrent episode: one a process, at most four processes a run. */
const PROXY_PORTS = 4;

/** What the runs of one episode share. */
interface Episode {
  readonly label: string;
  readonly sim: RunningSimulator;
  readonly admin: pg.Pool;
  readonly options: PhaseOptions;
  readonly tally: Tally;
  readonly ledger: Ledger;
  readonly grid: readonly Window[];
  readonly from: string;
  /** `backfill --from --to` of the whole range, then the flags every run shares. */
  readonly base: readonly string[];
  /** The flags every run shares: window size, concurrency, schema. */
  readonly shared: readonly string[];
  readonly schema: string;
  /** A run's environment: the connector's clock starts where the simulator's is, as one clock would be. */
  env(): Record<string, string>;
  /** Concurrent mode: the API through a recording proxy (solo runs through its first port). */
  readonly proxy: RecordingProxy | null;
  /** The last date of an episode that ends today (concurrent mode only, which may then draw syncs). */
  readonly today: string | null;
}

/** One faulty run of the episode, planned. */
interface PlannedRun {
  readonly faults: FaultPlan;
  readonly filterArgs: readonly string[];
  readonly reload: boolean;
  /** Set for a filter change with --reset: the new brands. */
  readonly brands: readonly string[] | null;
  /** Set for a concurrent run. */
  readonly concurrent: ConcurrentPlan | null;
}

/** The outcome of a faulty run, as the episode needs it. */
interface RunEnd {
  /** Some process exited 1: a recovery run follows. */
  readonly failedWhole: boolean;
  /** The filters from now on (a --reset that completed changes them). */
  readonly filterArgs: readonly string[];
}

/** Records what struck a faulty run (just counted in tally.runs) against its plan: the kinds that struck. */
function recordFaults(ep: Episode, planned: PlannedRun, served: Readonly<Record<string, number>>): string[] {
  const label = `${ep.options.concurrent ? 'concurrent ' : ''}run ${ep.tally.runs}`;
  ep.tally.faults.record(label, planned.faults.kinds, served);
  return FaultTally.struck(planned.faults.kinds, served);
}

/** A --reset run, or any run outside concurrent mode: one process, as the soak always did. */
async function soloFaultyRun(ep: Episode, planned: PlannedRun): Promise<RunEnd> {
  const { tally, options, ledger } = ep;
  const resetArgs = planned.brands === null ? [] : ['--brands', planned.brands.join(','), '--reset', '--yes'];
  const args = [
    ...ep.base,
    ...(resetArgs.length > 0 ? resetArgs : planned.filterArgs),
    ...(planned.reload ? ['--reload'] : []),
  ];
  const runStarted = Date.now();
  const outcome = await faultyRun(args, ep.env(), ep.sim, ep.admin, planned.faults, options.runGuardMs, {
    commitMarker: commitLockKey(ep.schema),
  });
  const runMs = Date.now() - runStarted;
  ep.sim.setFaults(NO_FAULTS);
  ep.proxy?.take();
  tally.runs += 1;
  const { code, signal } = outcome.result;
  add(tally.exits, exitLabel(code, signal));
  const served = { ...outcome.served };
  const problems: string[] = [...summaryProblem(outcome.result, 'the run')];
  let filterArgs = planned.filterArgs;
  // In concurrent mode a --reset run may find the schema held (exit 4): allowed, and counted.
  const resetRefused = planned.brands !== null && options.concurrent && code === EXIT.lockHeld;
  if (resetRefused) tally.concurrent.resetLockHeld += 1;
  else if (planned.brands !== null) {
    if (outcome.result.summary?.reset !== undefined) {
      ledger.reset(planned.brands);
      filterArgs = ['--brands', planned.brands.join(',')];
      served['filter-reset'] = 1;
    } else problems.push('the --reset run printed no reset in its summary');
  }
  if (outcome.hung) problems.push(`the run was still alive after ${options.runGuardMs} ms (hang)`);
  // A signal that lands before the CLI has installed its handlers (module loading) ends it by the signal itself:
  // nothing was written yet, and the tables are checked below like after any other run.
  const diedOfSignal = outcome.signalled !== null && signal === outcome.signalled;
  const allowed = allowedExits(outcome.signalled, outcome.backendsKilled);
  if (!diedOfSignal && !resetRefused && !allowed.has(code ?? -1)) {
    problems.push(`unexpected exit ${exitLabel(code, signal)}: ${lastError(outcome.result)}`);
  }
  const check = await ledger.check(ep.admin, outcome.committed);
  problems.push(...check.problems);
  const struck = recordFaults(ep, planned, served);
  report(
    tally,
    options,
    `run ${tally.runs}: ${ep.label} ${args.slice(11).join(' ')} faults [${planned.faults.kinds.join(', ')}] fired [${outcome.fired.join(', ')}] struck [${struck.join(', ')}] exit ${exitLabel(code, signal)} in ${runMs} ms, ${check.windows} windows in the ledger`,
    problems,
    [outcome.result],
  );
  return { failedWhole: code === 1, filterArgs };
}

/** 2 to 4 processes at once on the episode's schema, checked against the ledger after they all ended. */
async function concurrentFaultyRun(ep: Episode, planned: PlannedRun, plan: ConcurrentPlan): Promise<RunEnd> {
  const { tally, options, ledger } = ep;
  const proxy = ep.proxy;
  if (proxy === null) throw new Error('a concurrent run needs the recording proxy');
  const runStarted = Date.now();
  const outcome = await concurrentRun({
    sim: ep.sim,
    admin: ep.admin,
    proxy,
    faults: planned.faults,
    plan,
    grid: ep.grid,
    shared: [...ep.shared, ...planned.filterArgs],
    episodeFrom: ep.from,
    reload: planned.reload,
    env: ep.env(),
    guardMs: options.runGuardMs,
    today: ep.today,
  });
  const runMs = Date.now() - runStarted;
  ep.sim.setFaults(NO_FAULTS);
  tally.runs += 1;
  const c = tally.concurrent;
  c.runs += 1;
  add(c.processesPerRun, String(outcome.processes.length));
  add(c.shapes, plan.shape);
  const labels = outcome.processes.map(({ outcome: p }) => exitLabel(p.result.code, p.result.signal));
  for (const label of labels) {
    add(tally.exits, label);
    add(c.exits, label);
  }
  add(c.exitSets, [...labels].sort().join(' '));
  c.byOthers += outcome.byOthers;
  c.duplicates += outcome.duplicates;
  c.duplicatesAfterCut += outcome.duplicatesAfterCut;
  c.lockHeld += outcome.lockHeld;
  c.unknownReports += outcome.unknownReports;
  if (outcome.syncsReplaced) c.syncsReplaced += 1;
  const check = await ledger.check(ep.admin, outcome.committed);
  const problems = [...outcome.problems, ...check.problems];
  const filters = planned.filterArgs.join(' ');
  const struck = recordFaults(ep, planned, outcome.served);
  report(
    tally,
    options,
    `run ${tally.runs}: ${ep.label}${filters === '' ? '' : ` ${filters}`}${planned.reload ? ' --reload' : ''} ${plan.shape} [${describeProcesses(outcome.processes)}] faults [${planned.faults.kinds.join(', ')}] fired [${outcome.fired.join(', ')}] struck [${struck.join(', ')}] in ${runMs} ms, ${outcome.byOthers} windows by others, ${check.windows} windows in the ledger`,
    problems,
    outcome.processes.map(({ outcome: p }) => p.result),
  );
  return {
    failedWhole: outcome.processes.some(({ outcome: p }) => p.result.code === 1),
    filterArgs: planned.filterArgs,
  };
}

/** A run without faults after a run that lost its database (exit 1): it must exit 0, and is checked. */
async function recoveryRun(ep: Episode, filterArgs: readonly string[]): Promise<void> {
  const { tally } = ep;
  // A later run: the API no longer hands back a report that failed or vanished in the faulty run.
  ep.sim.advanceTime(PAST_REUSE_MS);
  const recovery = await runCli([...ep.base, ...filterArgs], ep.env());
  ep.proxy?.take();
  tally.runs += 1;
  tally.recoveryRuns += 1;
  add(tally.exits, exitLabel(recovery.code, recovery.signal));
  const after = await ep.ledger.check(ep.admin, new Set());
  const problems = [...after.problems];
  if (recovery.code !== 0) {
    problems.push(
      `the recovery run exited ${exitLabel(recovery.code, recovery.signal)}: ${lastError(recovery)}`,
    );
  }
  report(tally, ep.options, `run ${tally.runs}: ${ep.label} recovery run`, problems, [recovery]);
}

/**
 * The final clean runs complete whatever the faulty runs left. After late data, a run that resumed an attempt
 * begun before the revision loaded that report's figures, as it should: a clean --reload then brings every window
 * to the current truth.
 */
async function cleanRuns(ep: Episode, filterArgs: readonly string[]): Promise<number> {
  const { tally, ledger } = ep;
  const finals = ledger.epoch > 0 ? [[], ['--reload']] : [[]];
  // A later run: the API no longer hands back a report that failed or vanished in the faulty runs.
  ep.sim.advanceTime(PAST_REUSE_MS);
  let check: LedgerCheck = { problems: [], windows: 0, posts: 0 };
  for (const [i, extra] of finals.entries()) {
    const clean = await runCli([...ep.base, ...filterArgs, ...extra], ep.env());
    ep.proxy?.take();
    tally.runs += 1;
    add(tally.exits, exitLabel(clean.code, clean.signal));
    const problems: string[] = [];
    if (clean.code !== 0) {
      problems.push(`the clean run exited ${exitLabel(clean.code, clean.signal)}: ${lastError(clean)}`);
    }
    check =
      i === finals.length - 1
        ? await ledger.checkComplete(ep.admin)
        : await ledger.check(ep.admin, new Set());
    problems.push(...check.problems);
    report(
      tally,
      ep.options,
      `run ${tally.runs}: ${ep.label} clean run ${extra.join(' ')}, ${check.posts} posts`,
      problems,
      [clean],
    );
  }
  return check.posts;
}

/** The brands of a filter change: one or two of the range's, picked from the seed. */
function pickBrands(random: Random, ledger: Ledger, from: string, to: string): string[] {
  const names = [...new Set(ledger.truth(0, { start: from, end: to }).map((p) => String(p.fields.brand)))]
    .filter((name) => !name.includes(','))
    .sort();
  return [random.pick(names), random.pick(names)].filter((b, i, all) => all.indexOf(b) === i);
}

/** Draws the next faulty run (from the seed) and sets the simulator up for it (clock, late data). */
function planRun(ep: Episode, random: Random, r: number, filterArgs: readonly string[]): PlannedRun {
  const { tally, ledger } = ep;
  const dates: string[] = [];
  for (let d = ep.from; d <= (ep.grid.at(-1)?.end ?? ep.from); d = addDays(d, 1)) dates.push(d);
  // Each kind in turn is the run's primary fault: a soak of any size plans every kind (in concurrent mode, every
  // kind a run of several processes may have).
  const kinds = ep.options.concurrent ? SHARED_RUN_KINDS : FAULT_KINDS;
  const primary = kinds[tally.faultyRuns % kinds.length] ?? 'slow-responses';
  const faults = drawFaultPlan(random, { windowStarts: ep.grid.map((w) => w.start), dates }, primary, {
    canReset: filterArgs.length === 0,
    shared: ep.options.concurrent,
  });
  tally.faultyRuns += 1;
  // Re-runs come after the reuse period, so that report failures and expiries strike them too; always when a
  // report is to fail, since a reused report is never a new one that can.
  if (r > 0 && (random.chance(0.7) || faults.kinds.includes('report-fails')))
    ep.sim.advanceTime(PAST_REUSE_MS);
  if (faults.reviseDates.length > 0) {
    ledger.revise(faults.reviseDates);
    ep.sim.advanceTime(PAST_REUSE_MS);
  }
  // After the first run most windows are loaded: a reload gives the faults something to strike.
  const reload = faults.reviseDates.length > 0 || r > 0;
  const last = ep.grid.at(-1)?.end ?? ep.from;
  const brands = faults.kinds.includes('filter-reset') ? pickBrands(random, ledger, ep.from, last) : null;
  // A --reset must hold the schema alone: it never runs alongside others.
  const concurrent =
    ep.options.concurrent && brands === null
      ? drawConcurrentPlan(random, ep.grid.length, { canSync: ep.today !== null })
      : null;
  return { faults, filterArgs, reload, brands, concurrent };
}

async function episode(
  index: number,
  random: Random,
  options: PhaseOptions,
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
  const service = drawService(simSeed);
  const sim: RunningSimulator = await startSimulator({
    seed: simSeed,
    postsPerDay,
    generationDelayMs,
    pageSize,
    now: episodeStart(random),
    token: `soak-${randomBytes(6).toString('hex')}`,
    ...service.options,
  });
  let proxy: RecordingProxy | null = null;
  try {
    // Concurrent mode: half the episodes end today, so that a sync (which loads up to today) can join them.
    const today = options.concurrent && random.chance(0.5) ? todayUtc(new Date(sim.now())) : null;
    const from = today === null ? randomStart(random) : addDays(today, -(13 + random.int(29)));
    const to = today ?? addDays(from, 13 + random.int(29));
    const concurrency = 1 + random.int(4);
    const schema = `soak_${index}`;
    const shared = [
      '--window-days',
      String(windowDays),
      '--concurrency',
      String(concurrency),
      '--schema',
      schema,
    ];
    proxy = options.concurrent ? await RecordingProxy.start(sim.baseUrl, PROXY_PORTS) : null;
    const env = cliEnv(sim, databaseUrl, CLEAN_ENV);
    const grid = ownGrid(from, to, windowDays);
    const live = today === null ? '' : ', ending today';
    const ep: Episode = {
      label: `episode ${index} (sim seed ${simSeed}, ${postsPerDay}/day, pages of ${pageSize}, ${from}..${to}${live}, window ${windowDays}, concurrency ${concurrency}; ${service.label})`,
      sim,
      admin,
      options,
      tally,
      ledger: new Ledger(sim, schema, { from, to }, grid),
      grid,
      from,
      base: ['backfill', '--from', from, '--to', to, ...shared],
      shared,
      schema,
      env: () => ({
        ...env,
        ...(proxy === null ? {} : { POST_REPORTS_BASE_URL: proxy.baseUrl(0) }),
        POST_REPORTS_NOW: sim.now(),
      }),
      proxy,
      today,
    };
    tally.episodes += 1;
    let filterArgs: readonly string[] = [];

    const faultyRuns = 1 + random.int(3);
    for (let r = 0; r < faultyRuns && plannedRuns(tally) < options.runs - 1; r += 1) {
      const planned = planRun(ep, random, r, filterArgs);
      const end =
        planned.concurrent === null
          ? await soloFaultyRun(ep, planned)
          : await concurrentFaultyRun(ep, planned, planned.concurrent);
      filterArgs = end.filterArgs;
      // A run that lost its database (exit 1) is followed by a run without faults, whose result is checked.
      if (end.failedWhole) await recoveryRun(ep, filterArgs);
    }
    tally.posts += await cleanRuns(ep, filterArgs);
    const stats = sim.stats();
    if (proxy !== null) {
      tally.concurrent.simulatorCreations += stats.creationCalls;
      tally.concurrent.proxyCreations += proxy.creationsAnswered;
    }
  } finally {
    await proxy?.close();
    await sim.close();
  }
}

async function ageEpisode(
  index: number,
  random: Random,
  options: PhaseOptions,
  databaseUrl: string,
  admin: pg.Pool,
  tally: Tally,
): Promise<void> {
  const ep = await dataAgeEpisode(index, random, databaseUrl, admin, CLEAN_ENV);
  tally.episodes += 1;
  tally.posts += ep.posts;
  for (const run of ep.runs) {
    tally.runs += 1;
    add(tally.exits, exitLabel(run.result.code, run.result.signal));
    report(tally, options, `run ${tally.runs}: ${run.line}`, run.problems, [run.result]);
  }
}

function printConcurrent(c: ConcurrentTally): string[] {
  const lines = [
    `soak: ${c.runs} concurrent runs: processes per run ${JSON.stringify(c.processesPerRun)}, shapes ${JSON.stringify(c.shapes)}`,
    `soak: (varies with timing) exit codes of their processes ${JSON.stringify(c.exits)}; by run ${JSON.stringify(c.exitSets)}`,
    // Which process of a run gets to a window first, and how many calls a process makes before another has
    // recorded a report, vary from one replay to the next: these two lines are marked as such.
    `soak: (varies with timing) windows a process found loaded by another (windows.byOthers) ${c.byOthers}`,
    `soak: duplicate live requests ${c.duplicates} (windows whose report two processes of a run were creating or reading at overlapping times, from the recording proxy)`,
    `soak: (varies with timing) the same after the database cut the sessions holding the claims (allowed: only one commits) ${c.duplicatesAfterCut}`,
    `soak: (varies with timing) creation calls answered: ${c.simulatorCreations} by the simulator, ${c.proxyCreations} handed back whole through the proxy (the rest: their client went away first)`,
  ];
  if (c.lockHeld > 0) {
    lines.push(
      `soak: FAIL ${c.lockHeld} processes of concurrent runs exited 4 (lock held): runs must share a schema`,
    );
  }
  if (c.resetLockHeld > 0) lines.push(`soak: --reset runs refused with exit 4 (allowed): ${c.resetLockHeld}`);
  if (c.unknownReports > 0) {
    lines.push(
      `soak: note: ${c.unknownReports} report reads the proxy could not tie to a window (not checked)`,
    );
  }
  if (c.syncsReplaced > 0) {
    lines.push(
      `soak: note: ${c.syncsReplaced} runs had their syncs replaced by backfills (the UTC date moved on)`,
    );
  }
  return lines;
}

function printOrganizations(o: OrganizationTally): string[] {
  return [
    `soak: organizations an episode ${JSON.stringify(o.perEpisode)}; pairs sharing post ids ${o.collidingPairs}; episodes with the default organization ${o.withDefault}; organizations with filters of their own ${o.filtered}, with a field selection ${o.selecting}`,
    `soak: faulty runs of one organization ${o.soloRuns}, of several at once (by their number) ${JSON.stringify(o.atOnce)}; resets completed alone ${o.resetsAlone}, alongside others' runs ${o.resetsAlongside}`,
    `soak: organizations a run did not start, found byte for byte as before it: ${o.untouchedChecked} checks`,
    `soak: renames between runs ${o.renames}, beside a run of others while it was at work ${o.renamesBeside} (after it, the run having ended first: ${o.renamesAfter}); resets of one organization between runs ${o.resetsBetween}`,
    ...(o.fileRuns > 0
      ? [
          `soak: runs of several organizations in one process (--organizations FILE) ${o.fileRuns}, their organizations' ends ${JSON.stringify(o.fileEnds)}`,
        ]
      : []),
  ];
}

function replay(options: PhaseOptions): string {
  const mode = options.concurrent
    ? ' --concurrent'
    : options.organizationsFile === true
      ? ' --organizations-file'
      : options.organizations
        ? ' --organizations'
        : '';
  return `npm run soak --${mode} --seed ${options.seed} --runs ${options.runs}`;
}

/** One phase in a database of its own, its random draws from the seed afresh: what `replay` repeats alone. */
async function runPhase(options: PhaseOptions, databaseUrl: string, tally: Tally): Promise<void> {
  console.log(`soak: seed ${options.seed}, ${options.runs} runs (replay: ${replay(options)})`);
  const started = Date.now();
  const name = `etl_soak_${Date.now().toString(36)}_${randomBytes(3).toString('hex')}`;
  const server = new pg.Client({ connectionString: databaseUrl });
  await server.connect();
  await server.query(`CREATE DATABASE ${pg.escapeIdentifier(name)}`);
  const url = new URL(databaseUrl);
  url.pathname = `/${name}`;
  // The harness's own sessions are never cut idle: an idle cut is a fault it deals the connector.
  const admin = new pg.Pool({
    connectionString: url.toString(),
    max: 2,
    application_name: 'etl-soak',
    options: '-c idle_session_timeout=0',
  });
  admin.on('error', () => {});
  try {
    const random = new Random(mixSeed(options.seed, 0x50a4));
    for (let i = 0; plannedRuns(tally) < options.runs; i += 1) {
      if (options.organizations) await organizationEpisode(i, random, options, url.toString(), admin, tally);
      // Every third plain episode: windows of several extents on one schema over time (data-age-episode.ts).
      else if (!options.concurrent && i % 3 === 2)
        await ageEpisode(i, random, options, url.toString(), admin, tally);
      else await episode(i, random, options, url.toString(), admin, tally);
    }
  } finally {
    await admin.end();
    await server.query(`DROP DATABASE IF EXISTS ${pg.escapeIdentifier(name)} WITH (FORCE)`);
    await server.end();
  }
  const seconds = Math.round((Date.now() - started) / 1000);
  console.log(
    `soak: ${replay(options)}: ${plannedRuns(tally)} runs (${tally.faultyRuns} with faults) in ${tally.episodes} episodes, discrepancies ${tally.discrepancies}`,
  );
  // Whether a process loses its database for longer than it waits (exit 1), and how each process of a
  // concurrent run ends, depend on timing; what is planned, and what the tables must hold, do not.
  console.log(
    `soak: (varies with timing) took ${seconds} s, recovery runs after exit 1: ${tally.recoveryRuns}`,
  );
  console.log(
    `soak: ${options.concurrent || options.organizations ? '(varies with timing) ' : ''}exits ${JSON.stringify(tally.exits)}`,
  );
  if (options.concurrent) for (const line of printConcurrent(tally.concurrent)) console.log(line);
  if (options.organizations) for (const line of printOrganizations(tally.organizations)) console.log(line);
}

async function main(): Promise<number> {
  const options = parseSoakArgs(process.argv.slice(2), process.env);
  // Faults are tallied run by run: a kind that struck too few of its runs fails the soak. In concurrent runs,
  // which process a fault finds first, and whether one is still asking when it strikes, vary with timing: their
  // tally is shown, its misses named, and the soak fails on their discrepancies, not on their share.
  const faults = new FaultTally();
  const concurrentFaults = new FaultTally();
  // Runs of several organizations at once (--organizations): tallied apart, as concurrent runs are.
  const atOnceFaults = new FaultTally();
  let discrepancies = 0;
  let posts = 0;
  for (const phase of options.phases) {
    const tally = newTally(phase.concurrent ? concurrentFaults : faults, atOnceFaults);
    await runPhase(
      { ...phase, seed: options.seed, runGuardMs: options.runGuardMs, verbose: options.verbose },
      options.databaseUrl,
      tally,
    );
    discrepancies += tally.discrepancies;
    posts += tally.posts;
  }
  const missing = faults.failures(options.minStruckShare);
  console.log(
    `soak: faults by kind: the runs that planned it, those in which it struck (served to that run alone: counted by the simulator, or done by the harness to its processes); at least ${Math.round(options.minStruckShare * 100)} % must strike`,
  );
  for (const line of faults.table({ served: options.verbose })) console.log(line);
  for (const line of missing) console.log(`soak: FAIL ${line}`);
  const concurrentTable = concurrentFaults.table({ served: options.verbose });
  if (concurrentTable.length > 0) {
    console.log('soak: (varies with timing) faults by kind in concurrent runs, misses named but not failed:');
    for (const line of concurrentTable) console.log(`  (varies with timing)${line}`);
  }
  const atOnceTable = atOnceFaults.table({ served: options.verbose });
  if (atOnceTable.length > 0) {
    console.log(
      'soak: (varies with timing) faults by kind in runs of several organizations at once, misses named but not failed:',
    );
    for (const line of atOnceTable) console.log(`  (varies with timing)${line}`);
  }
  console.log(
    `soak: ${posts} posts verified after the final clean runs, discrepancies ${discrepancies} (against the ledger after every run, the current truth at the end)`,
  );
  return discrepancies === 0 && missing.length === 0 ? 0 : 1;
}

process.exitCode = await main();
