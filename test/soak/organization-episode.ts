/**
 * An episode of the --organizations soak: one schema loaded by 2 to 5 organizations, each with its own token in
 * one simulator serving them all, its own posts, window size, and now and then its own filters or field
 * selection (organization-plan.ts). Each faulty run is one organization's run, or several organizations' runs
 * started at once, under the usual faults; a --reset of one organization comes now and then. After every run
 * each organization it ran is checked against its own ledger (verify-tables.ts) and its run state
 * (organization-state.ts); each one it did not run must hold its rows and state byte for byte as before; and no
 * row may carry a key that is no organization's. The episode ends with a clean run per organization, each of
 * which must then hold its own simulator truth.
 *
 * With --organizations-file, a faulty run of several organizations is one process loading them all through an
 * organizations file (`--organizations FILE`, each entry its token, window size, filters and field selection):
 * the summary's `organizations` must name each once, with an exit code its faults allow, and the process's exit
 * code must be the most serious of theirs. Such a run resets none (a --reset is one organization's). The episode
 * then ends with one clean run of every organization through the file.
 *
 * In both modes, ids take the forms other systems use (organization-plan.ts), and now and then between runs one
 * organization is renamed to an id never used (`rename-organization`) or reset over the range with its settings
 * (`backfill --organization X --reset --yes`); a rename also comes beside a faulty run of other organizations,
 * started once the run's first report was created. After a rename, the new id must hold byte for byte what the old
 * one held (the key, stages and the record of renames aside), the old id nothing, the schema's record of renames
 * each rename made; after a reset, the organization every window of its current truth. Every other organization
 * must hold its rows and state byte for byte as before. Each counts as a fault kind (`organization-rename`,
 * `rename-beside-run`, `organization-reset`), struck when it was done (a rename beside a run: while the run was
 * at work).
 */
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { SETTINGS, type SettingSpec } from '../../src/config.js';
import { addDays } from '../../src/model/dates.js';
import type { Window } from '../../src/model/window.js';
import { EXIT, type ExitCode, mostSerious } from '../../src/pipeline/exit-codes.js';
import type { Random } from '../../src/simulator/random.js';
import { type RunningSimulator, startSimulator } from '../../src/simulator/server.js';
import { type CliResult, runCli } from '../helpers/cli.js';
import { cliEnv } from '../helpers/e2e-env.js';
import { CLEAN_ENV, episodeStart, PAST_REUSE_MS, randomStart } from './episode-settings.js';
import { allowedExits, exitLabel, lastError, summaryProblem } from './exits.js';
import { drawFaultPlan, type FaultKind, type FaultPlan, NO_FAULTS, SHARED_RUN_KINDS } from './fault-plan.js';
import { FaultTally } from './fault-tally.js';
import { faultyProcesses } from './faulty-run.js';
import {
  drawOrganizationRun,
  drawOrganizations,
  type OrganizationRunPlan,
  postsPerWindow,
  renameTarget,
  richest,
  type SoakOrganization,
  sameIds,
} from './organization-plan.js';
import {
  checkOrganizationState,
  firstDifference,
  foreignRows,
  holdings,
  renameRecords,
} from './organization-state.js';
import { drawService } from './service-draw.js';
import type { PhaseOptions } from './soak-args.js';
import { add, plannedRuns, report, type Tally } from './soak-tally.js';
import { ownGrid } from './spec-grid.js';
import { Ledger } from './verify-tables.js';

const RESET_FIRST = SHARED_RUN_KINDS.indexOf('filter-reset');

/** Kinds that strike a report of two pages or more, or a run long enough for a session to sit idle. */
const LONG_KINDS: readonly FaultKind[] = ['report-expires', 'page-token-expires', 'report-gone', 'idle-cut'];

/** One organization over an episode: its plan, its ledger, and what its runs changed of its target. */
interface OrganizationRecord {
  /** Its id changes when it is renamed (its token, posts and settings never do). */
  org: SoakOrganization;
  readonly grid: readonly Window[];
  readonly ledger: Ledger;
  /** The brands of its last --reset that completed, or null. */
  brands: readonly string[] | null;
  resets: number;
}

interface Episode {
  readonly label: string;
  readonly sim: RunningSimulator;
  readonly admin: pg.Pool;
  readonly options: PhaseOptions;
  readonly tally: Tally;
  readonly schema: string;
  readonly from: string;
  readonly to: string;
  readonly records: readonly OrganizationRecord[];
  /** The organization whose windows have the most pages (see organizationEpisode). */
  readonly richest: number;
  readonly baseEnv: Record<string, string>;
  /** Where its organizations files are written (--organizations-file). */
  readonly dir: string;
  /** The renames made, in their order: the schema's record of renames must hold these. */
  readonly renames: [string, string][];
  /** Every id the episode's organizations held: a rename is to an id never used. */
  readonly usedIds: Set<string>;
}

/** What the tables of a run's organizations are checked against. */
interface RunCheck {
  /** The organizations the run started: their rows against their ledger; the others, against their snapshot. */
  readonly ran: ReadonlySet<number>;
  readonly before: ReadonlyMap<number, string>;
  /** Windows each organization's process logged as committed. */
  readonly committed: ReadonlyMap<number, ReadonlySet<string>>;
  /** The episode's last check: each organization it ran must hold its current truth in every window. */
  readonly complete: boolean;
  /**
   * Organizations renamed since `before` (not in `ran`): their holdings under the old id then (asRenamed), which
   * their new id must hold now, byte for byte.
   */
  readonly renamed?: ReadonlyMap<number, string>;
}

/** A run's environment: its organization's token and, unless its runs name it by flag or not at all, its id. */
function envOf(ep: Episode, org: SoakOrganization): Record<string, string> {
  return {
    ...ep.baseEnv,
    POST_REPORTS_TOKEN: org.token,
    ...(org.via === 'env' ? { POST_REPORTS_ORGANIZATION: org.id } : {}),
    POST_REPORTS_NOW: ep.sim.now(),
  };
}

/** The backfill of the episode's range for one organization, with its settings and filters, then `extra`. */
function argsOf(ep: Episode, record: OrganizationRecord, extra: readonly string[] = []): string[] {
  const { org } = record;
  return [
    'backfill',
    '--from',
    ep.from,
    '--to',
    ep.to,
    '--window-days',
    String(org.windowDays),
    '--concurrency',
    String(org.concurrency),
    '--schema',
    ep.schema,
    ...(org.via === 'flag' ? ['--organization', org.id] : []),
    ...org.filterArgs,
    ...org.selectionArgs,
    ...(record.brands === null ? [] : ['--brands', record.brands.join(',')]),
    ...extra,
  ];
}

/** The settings of flags (`--markets US,JP`), keyed by their variables, as an organizations file holds them. */
function flagSettings(args: readonly string[]): Record<string, string> {
  const specs: SettingSpec[] = Object.values(SETTINGS);
  const settings: Record<string, string> = {};
  for (let i = 0; i < args.length; i += 2) {
    const spec = specs.find((s) => s.flag === args[i]);
    if (spec === undefined) throw new Error(`no setting has the flag ${args[i]}`);
    settings[spec.env] = args[i + 1] ?? '';
  }
  return settings;
}

/**
 * The backfill of the episode's range for several organizations in one process: an organizations file of their
 * settings (`brandsOf`: the brands each loads with), then `extra`.
 */
function fileCommand(
  ep: Episode,
  indexes: readonly number[],
  extra: readonly string[],
): { args: string[]; env: Record<string, string> } {
  const entries: Record<string, Record<string, string>> = {};
  for (const i of indexes) {
    const record = ep.records[i] as OrganizationRecord;
    const { org } = record;
    entries[org.id] = {
      POST_REPORTS_TOKEN: org.token,
      ...flagSettings([
        '--window-days',
        String(org.windowDays),
        ...org.filterArgs,
        ...org.selectionArgs,
        ...(record.brands === null ? [] : ['--brands', record.brands.join(',')]),
      ]),
    };
  }
  const path = join(ep.dir, `organizations-${ep.tally.runs + 1}.json`);
  writeFileSync(path, JSON.stringify(entries, null, 2));
  chmodSync(path, 0o600);
  // The run's budget: what the organizations' own runs would have had together, up to 8.
  const concurrency = Math.min(
    8,
    indexes.reduce((n, i) => n + (ep.records[i]?.org.concurrency ?? 1), 0),
  );
  return {
    args: [
      'backfill',
      '--from',
      ep.from,
      '--to',
      ep.to,
      '--concurrency',
      String(concurrency),
      '--schema',
      ep.schema,
      '--organizations',
      path,
      ...extra,
    ],
    env: { ...ep.baseEnv, POST_REPORTS_NOW: ep.sim.now() },
  };
}

/** The windows of every "windows committed" line of a run of several organizations, by organization. */
function committedByOrganization(stderr: string): Map<string, Set<string>> {
  const out = new Map<string, Set<string>>();
  for (const line of stderr.split('\n')) {
    if (!line.includes('"msg":"windows committed"')) continue;
    try {
      const parsed = JSON.parse(line) as { organization?: unknown; windows?: unknown };
      const org = String(parsed.organization);
      const windows = out.get(org) ?? new Set<string>();
      if (Array.isArray(parsed.windows)) for (const w of parsed.windows) windows.add(String(w));
      out.set(org, windows);
    } catch {
      // A line cut by SIGKILL: its commit is checked through the state tables anyway.
    }
  }
  return out;
}

/** One organization's end in the summary of a run of several. */
interface OrganizationEnd {
  readonly organization: string;
  readonly exitCode: number;
  readonly status: string;
}

/**
 * What is wrong with the summary of a run of several organizations in one process: each organization of the run
 * named once, each with an exit code `allowed`, none held by another's lock, and the process's exit code the most
 * serious of theirs. Their ends are returned (none without a summary: a process killed by a signal).
 */
function checkFileSummary(
  ep: Episode,
  indexes: readonly number[],
  result: CliResult,
  allowed: ReadonlySet<number>,
  who: string,
): { problems: string[]; ends: OrganizationEnd[] } {
  if (result.summary === undefined) return { problems: [], ends: [] };
  const ends = (result.summary.organizations ?? []) as OrganizationEnd[];
  const problems: string[] = [];
  const ids = indexes.map((i) => ep.records[i]?.org.id ?? '');
  const named = ends.map((e) => e.organization);
  if (JSON.stringify(named) !== JSON.stringify(ids)) {
    problems.push(
      `${who}: the summary names ${JSON.stringify(named)}, not the file's ${JSON.stringify(ids)}`,
    );
  }
  for (const end of ends) {
    if (end.exitCode === EXIT.lockHeld) {
      problems.push(
        `${who}: ${end.organization} exited 4 (lock held): organizations must not hold each other`,
      );
    } else if (!allowed.has(end.exitCode)) {
      problems.push(
        `${who}: ${end.organization} ended ${end.status} (exit ${end.exitCode}), which its faults do not explain`,
      );
    }
    add(ep.tally.organizations.fileEnds, String(end.exitCode));
  }
  const worst = mostSerious(ends.map((e) => e.exitCode as ExitCode));
  if (result.summary.exitCode !== worst || (result.code !== null && result.code !== worst)) {
    problems.push(
      `${who}: exit ${exitLabel(result.code, result.signal)} (summary ${String(result.summary.exitCode)}), not the most serious of its organizations' (${worst})`,
    );
  }
  return { problems, ends };
}

/** The rows and state of the organizations a run will not start, as they are before it. */
async function snapshotOthers(ep: Episode, ran: ReadonlySet<number>): Promise<Map<number, string>> {
  const before = new Map<number, string>();
  for (const [i, record] of ep.records.entries()) {
    if (!ran.has(i)) before.set(i, await holdings(ep.admin, ep.schema, record.org.id));
  }
  return before;
}

/** Checks the schema after a run (see RunCheck): the problems, and the posts of the organizations it ran. */
async function checkRun(ep: Episode, check: RunCheck): Promise<{ problems: string[]; posts: number }> {
  const problems: string[] = [];
  let posts = 0;
  for (const [i, record] of ep.records.entries()) {
    const { org } = record;
    const renamedFrom = check.renamed?.get(i);
    if (renamedFrom !== undefined) {
      const after = await holdings(ep.admin, ep.schema, org.id, { asRenamed: true });
      if (after !== renamedFrom) {
        problems.push(
          `${org.id} (renamed) does not hold what its old id held: ${firstDifference(renamedFrom, after)}`,
        );
      }
    } else if (!check.ran.has(i)) {
      ep.tally.organizations.untouchedChecked += 1;
      const after = await holdings(ep.admin, ep.schema, org.id);
      const before = check.before.get(i) ?? '';
      if (after !== before) {
        problems.push(
          `${org.id} was not in the run, but its rows or state changed: ${firstDifference(before, after)}`,
        );
      }
      continue;
    }
    // A renamed organization's windows are checked against its ledger under the new id as well: none was lost.
    const ledger = check.complete
      ? await record.ledger.checkComplete(ep.admin)
      : await record.ledger.check(ep.admin, check.committed.get(i) ?? new Set());
    problems.push(...ledger.problems.map((line) => `${org.id}: ${line}`));
    posts += ledger.posts;
    problems.push(
      ...(await checkOrganizationState(ep.admin, ep.schema, org.id, {
        grid: record.grid,
        filters: { ...org.targetFilters, ...(record.brands === null ? {} : { brands: record.brands }) },
        selection: org.selection,
        resets: record.resets,
      })),
    );
  }
  problems.push(
    ...(await foreignRows(
      ep.admin,
      ep.schema,
      ep.records.map((r) => r.org.id),
    )),
    ...(await renameRecords(ep.admin, ep.schema, ep.renames)),
  );
  return { problems, posts };
}

/** A plan whose report failure is for a window of `grid`: its first, when the one drawn is not on it. */
function onGrid(faults: FaultPlan, grid: readonly Window[]): FaultPlan {
  const dates = faults.initial.failReportStartDates;
  const first = grid[0]?.start;
  if (dates === undefined || first === undefined || dates.every((d) => grid.some((w) => w.start === d))) {
    return faults;
  }
  return { ...faults, initial: { ...faults.initial, failReportStartDates: [first] } };
}

/** The brands of a filter change: one to three of the organization's, picked from the seed. */
function pickBrands(random: Random, record: OrganizationRecord, from: string, to: string): string[] {
  const names = [
    ...new Set(record.ledger.truth(0, { start: from, end: to }).map((p) => String(p.fields.brand))),
  ]
    .filter((name) => !name.includes(','))
    .sort();
  // Up to three of them: reports under the new filters still have several pages for the faults to strike.
  return [random.pick(names), random.pick(names), random.pick(names)].filter(
    (b, i, all) => all.indexOf(b) === i,
  );
}

/** A run without faults of one organization: after it lost its database (exit 1), or the episode's last. */
async function cleanRun(
  ep: Episode,
  index: number,
  what: string,
  extra: readonly string[],
  complete: boolean,
): Promise<{ result: CliResult; posts: number }> {
  const record = ep.records[index] as OrganizationRecord;
  const ran = new Set([index]);
  const before = await snapshotOthers(ep, ran);
  const args = argsOf(ep, record, extra);
  const result = await runCli(args, envOf(ep, record.org));
  ep.tally.runs += 1;
  add(ep.tally.exits, exitLabel(result.code, result.signal));
  const check = await checkRun(ep, { ran, before, committed: new Map(), complete });
  const problems = [...check.problems];
  if (result.code !== 0) {
    problems.push(`the ${what} exited ${exitLabel(result.code, result.signal)}: ${lastError(result)}`);
  }
  report(
    ep.tally,
    ep.options,
    `run ${ep.tally.runs}: ${ep.label} ${record.org.id} ${what}${extra.length > 0 ? ` ${extra.join(' ')}` : ''}, ${check.posts} posts`,
    problems,
    [result],
  );
  return { result, posts: check.posts };
}

/** One faulty run: the organizations of `plan`, each its own process, started at once under one fault plan. */
async function faultyRun(
  ep: Episode,
  random: Random,
  r: number,
  drawn: OrganizationRunPlan,
): Promise<number[]> {
  const { tally, options } = ep;
  const dates: string[] = [];
  for (let d = ep.from; d <= ep.to; d = addDays(d, 1)) dates.push(d);
  const windowStarts = [
    ...new Set(drawn.organizations.flatMap((i) => ep.records[i]?.grid.map((w) => w.start) ?? [])),
  ].sort();
  // Each kind in turn is the run's primary fault: a soak of any size plans every kind, a reset of one organization
  // first, so that even a short soak resets one while the others keep their rows.
  const primary =
    SHARED_RUN_KINDS[(tally.faultyRuns + RESET_FIRST) % SHARED_RUN_KINDS.length] ?? 'slow-responses';
  // A run of several organizations through their file resets none: a --reset is one organization's.
  const throughFile = options.organizationsFile === true && drawn.organizations.length > 1;
  const canReset = !throughFile && drawn.organizations.some((i) => ep.records[i]?.brands === null);
  const drawnFaults = drawFaultPlan(random, { windowStarts, dates }, primary, { canReset, shared: true });
  tally.faultyRuns += 1;
  // A fault that needs reports of several pages, or a long run, strikes the organization with the most posts a
  // window when it runs alone (if a reset is planned, one that may still be reset).
  const swap =
    drawn.organizations.length === 1 &&
    drawn.organizations[0] !== ep.richest &&
    (!drawnFaults.kinds.includes('filter-reset') || ep.records[ep.richest]?.brands === null) &&
    drawnFaults.kinds.some((kind) => LONG_KINDS.includes(kind));
  const plan = swap ? { organizations: [ep.richest], victim: 0 } : drawn;
  const faults = swap ? onGrid(drawnFaults, ep.records[ep.richest]?.grid ?? []) : drawnFaults;
  const resettable = plan.organizations.find((i) => ep.records[i]?.brands === null);
  const runRecords = plan.organizations.map((i) => ep.records[i] as OrganizationRecord);
  if (r > 0 && (random.chance(0.7) || faults.kinds.includes('report-fails')))
    ep.sim.advanceTime(PAST_REUSE_MS);
  if (faults.reviseDates.length > 0) {
    for (const record of runRecords) record.ledger.revise(faults.reviseDates);
    ep.sim.advanceTime(PAST_REUSE_MS);
  }
  const reload = faults.reviseDates.length > 0 || r > 0;
  const resetting = faults.kinds.includes('filter-reset') ? resettable : undefined;
  const resetRecord = resetting === undefined ? undefined : ep.records[resetting];
  const brands = resetRecord === undefined ? null : pickBrands(random, resetRecord, ep.from, ep.to);

  const ran = new Set(plan.organizations);
  const beside = await planRenameBeside(ep, random, ran, faults.kinds);
  // The organization renamed beside the run is snapshot under its old id too: what it must hold if the rename fails.
  const before = await snapshotOthers(ep, ran);
  const commands = throughFile
    ? [fileCommand(ep, plan.organizations, reload ? ['--reload'] : [])]
    : plan.organizations.map((i) => {
        const record = ep.records[i] as OrganizationRecord;
        const extra = reload ? ['--reload'] : [];
        if (i !== resetting || brands === null)
          return { args: argsOf(ep, record, extra), env: envOf(ep, record.org) };
        // The reset's own brands replace those of an earlier reset: argsOf adds them only once one completed.
        const args = argsOf(ep, { ...record, brands }, [...extra, '--reset', '--yes']);
        return { args, env: envOf(ep, record.org) };
      });
  const runStarted = Date.now();
  const renaming = beside === null ? null : startRenameBeside(ep, beside);
  const outcome = await faultyProcesses(commands, ep.sim, ep.admin, faults, options.runGuardMs, {
    victim: throughFile ? 0 : plan.victim,
  });
  const runMs = Date.now() - runStarted;
  ep.sim.setFaults(NO_FAULTS);
  tally.runs += 1;
  const renameEnd = renaming === null ? null : await renaming.afterRun();
  const alone = plan.organizations.length === 1;
  if (alone) tally.organizations.soloRuns += 1;
  else add(tally.organizations.atOnce, String(plan.organizations.length));
  const served = { ...outcome.served };
  const problems: string[] = [];
  const committed = new Map<number, ReadonlySet<string>>();
  const failed: number[] = [];
  if (throughFile) {
    tally.organizations.fileRuns += 1;
    const process = outcome.processes[0];
    const ids = plan.organizations.map((i) => ep.records[i]?.org.id ?? '');
    const who = `the run of ${ids.join(', ')} (--organizations)`;
    if (process !== undefined) {
      const { code, signal } = process.result;
      add(tally.exits, exitLabel(code, signal));
      const byOrg = committedByOrganization(process.result.stderr);
      for (const i of plan.organizations) {
        committed.set(i, byOrg.get(ep.records[i]?.org.id ?? '') ?? new Set());
      }
      problems.push(...summaryProblem(process.result, who));
      if (process.hung) problems.push(`${who} was still alive after ${options.runGuardMs} ms (hang)`);
      const allowed = allowedExits(process.signalled, outcome.backendsKilled);
      const { problems: summary, ends } = checkFileSummary(
        ep,
        plan.organizations,
        process.result,
        allowed,
        who,
      );
      problems.push(...summary);
      for (const end of ends) {
        if (end.exitCode === EXIT.failed)
          failed.push(ep.records.findIndex((r) => r.org.id === end.organization));
      }
      const killed = process.signalled !== null && signal === process.signalled;
      if (!killed && process.result.summary === undefined && !allowed.has(code ?? -1)) {
        problems.push(`${who}: unexpected exit ${exitLabel(code, signal)}: ${lastError(process.result)}`);
      }
    }
  }
  for (const [p, process] of (throughFile ? [] : outcome.processes).entries()) {
    const index = plan.organizations[p] ?? -1;
    const record = ep.records[index] as OrganizationRecord;
    const who = plan.organizations.length === 1 ? record.org.id : `${record.org.id} (process ${p})`;
    const { code, signal } = process.result;
    add(tally.exits, exitLabel(code, signal));
    committed.set(index, process.committed);
    if (code === 1) failed.push(index);
    problems.push(...summaryProblem(process.result, who));
    if (process.hung) problems.push(`${who} was still alive after ${options.runGuardMs} ms (hang)`);
    if (index === resetting && brands !== null) {
      if (process.result.summary?.reset !== undefined) {
        record.ledger.reset(brands);
        record.brands = brands;
        record.resets += 1;
        served['filter-reset'] = 1;
        if (alone) tally.organizations.resetsAlone += 1;
        else tally.organizations.resetsAlongside += 1;
      } else problems.push(`${who}: the --reset run printed no reset in its summary`);
    }
    // A signal that lands before the CLI has installed its handlers (module loading) ends it by the signal itself.
    if (process.signalled !== null && signal === process.signalled) continue;
    if (code === EXIT.lockHeld) {
      problems.push(
        `${who} exited 4 (lock held): organizations' runs must not hold each other: ${lastError(process.result)}`,
      );
    } else if (!allowedExits(process.signalled, outcome.backendsKilled).has(code ?? -1)) {
      problems.push(`${who}: unexpected exit ${exitLabel(code, signal)}: ${lastError(process.result)}`);
    }
  }
  let renamedLine = '';
  const renamed = new Map<number, string>();
  if (beside !== null && renameEnd !== null) {
    const who = `rename-organization --from ${beside.from} --to ${beside.to} (beside the run)`;
    const renameProblems = applyRename(ep, random, beside.index, beside.to, renameEnd.result, who);
    problems.push(...renameProblems);
    if (renameProblems.length === 0) {
      renamed.set(beside.index, beside.holdings);
      if (renameEnd.during) tally.organizations.renamesBeside += 1;
      else tally.organizations.renamesAfter += 1;
    }
    // Struck when the rename was done while the run was at work; one the run ended before is done all the same.
    const done = renameProblems.length === 0 && renameEnd.during ? 1 : 0;
    tally.faults.record(`organizations run ${tally.runs}`, ['rename-beside-run'], {
      'rename-beside-run': done,
    });
    renamedLine = ` ${beside.from} renamed ${beside.to} ${renameEnd.during ? 'during' : 'after'} the run, exit ${exitLabel(renameEnd.result.code, renameEnd.result.signal)};`;
  }
  const check = await checkRun(ep, { ran, before, committed, complete: false, renamed });
  problems.push(...check.problems);
  const label = `organizations run ${tally.runs}`;
  (alone ? tally.faults : tally.faultsAtOnce).record(label, faults.kinds, served);
  const struck = FaultTally.struck(faults.kinds, served);
  const processes = outcome.processes
    .map((process, p) => {
      if (throughFile) {
        const ids = plan.organizations.map((i) => ep.records[i]?.org.id).join('+');
        const sent = process.signalled === null ? '' : ` (${process.signalled} sent)`;
        return `${ids} through their file exit ${exitLabel(process.result.code, process.result.signal)}${sent}`;
      }
      const record = ep.records[plan.organizations[p] ?? -1];
      const sent = process.signalled === null ? '' : ` (${process.signalled} sent)`;
      const reset =
        plan.organizations[p] === resetting && brands !== null ? ` --reset --brands ${brands.join(',')}` : '';
      return `${record?.org.id}${reset} exit ${exitLabel(process.result.code, process.result.signal)}${sent}`;
    })
    .join(', ');
  report(
    tally,
    options,
    `run ${tally.runs}: ${ep.label}${reload ? ' --reload' : ''} [${processes}]${renamedLine} faults [${faults.kinds.join(', ')}] fired [${outcome.fired.join(', ')}] struck [${struck.join(', ')}] in ${runMs} ms`,
    problems,
    outcome.processes.map((process) => process.result),
  );
  return failed;
}

/** Kinds that cut the connector's sessions: a rename beside a run is never planned with them (see renameBeside). */
const SESSION_KINDS: readonly FaultKind[] = ['db-connection-killed', 'failover', 'idle-cut'];

/**
 * The organizations among `indexes` that hold a target or windows: those a rename can move (one of an id that holds
 * nothing is refused, exit 2).
 */
async function renamable(ep: Episode, indexes: readonly number[]): Promise<number[]> {
  const { rows } = await ep.admin.query<{ ready: boolean }>(
    'SELECT to_regclass($1) IS NOT NULL AND to_regclass($2) IS NOT NULL AS ready',
    [`${pg.escapeIdentifier(ep.schema)}.sync_state`, `${pg.escapeIdentifier(ep.schema)}.report_windows`],
  );
  if (rows[0]?.ready !== true) return [];
  const s = pg.escapeIdentifier(ep.schema);
  const held = await ep.admin.query<{ org: string }>(
    `SELECT org FROM ${s}.sync_state UNION SELECT org FROM ${s}.report_windows`,
  );
  const orgs = new Set(held.rows.map((r) => r.org));
  return indexes.filter((i) => orgs.has(ep.records[i]?.org.id ?? ''));
}

/** `rename-organization --from --to` of the episode's schema, through the built CLI. */
function renameCommand(
  ep: Episode,
  from: string,
  to: string,
): { args: string[]; env: Record<string, string> } {
  return {
    args: ['rename-organization', '--from', from, '--to', to, '--schema', ep.schema],
    env: { ...ep.baseEnv, POST_REPORTS_NOW: ep.sim.now() },
  };
}

/**
 * What is wrong with a rename's outcome (it must exit 0, its summary naming both ids); when there is nothing, the
 * organization now has the new id: in its record, its ledger and the episode's renames. A default organization,
 * which its runs did not name, is named by them from now on.
 */
function applyRename(
  ep: Episode,
  random: Random,
  index: number,
  to: string,
  result: CliResult,
  who: string,
): string[] {
  const record = ep.records[index] as OrganizationRecord;
  const from = record.org.id;
  const summary = result.summary as { status?: unknown; from?: unknown; to?: unknown } | undefined;
  if (result.code !== 0 || summary?.status !== 'succeeded' || summary.from !== from || summary.to !== to) {
    return [`${who} exited ${exitLabel(result.code, result.signal)}: ${lastError(result)}`];
  }
  const via = record.org.via === 'default' ? (random.chance(0.5) ? 'flag' : 'env') : record.org.via;
  record.org = { ...record.org, id: to, via };
  record.ledger.rename(to);
  ep.renames.push([from, to]);
  ep.usedIds.add(to);
  return [];
}

/**
 * Between runs: one organization renamed to an id of another form, through the built CLI. Its rows and state must
 * then be under the new id exactly as they were under the old one (none left under the old), and every other
 * organization's byte for byte as before. Counted as the kind `organization-rename`, struck when it was done.
 */
async function renameBetweenRuns(ep: Episode, random: Random): Promise<void> {
  const { tally } = ep;
  const candidates = await renamable(
    ep,
    ep.records.map((_, i) => i),
  );
  const index = random.pick(candidates.length > 0 ? candidates : [-1]);
  if (index < 0) return;
  const record = ep.records[index] as OrganizationRecord;
  const from = record.org.id;
  const to = renameTarget(random, from, ep.usedIds);
  const before = await snapshotOthers(ep, new Set([index]));
  const renamed = new Map([[index, await holdings(ep.admin, ep.schema, from, { asRenamed: true })]]);
  const { args, env } = renameCommand(ep, from, to);
  const result = await runCli(args, env);
  tally.runs += 1;
  add(tally.exits, exitLabel(result.code, result.signal));
  const who = `rename-organization --from ${from} --to ${to}`;
  const problems = applyRename(ep, random, index, to, result, who);
  if (problems.length === 0) tally.organizations.renames += 1;
  const check = await checkRun(ep, {
    ran: new Set(),
    before,
    committed: new Map(),
    complete: false,
    renamed,
  });
  problems.push(...check.problems);
  const label = `organizations run ${tally.runs}`;
  tally.faults.record(label, ['organization-rename'], {
    'organization-rename': problems.length === 0 ? 1 : 0,
  });
  report(tally, ep.options, `run ${tally.runs}: ${ep.label} ${who}`, problems, [result]);
}

/**
 * Between runs: one organization reset over the episode's range (`backfill --organization X --reset --yes`, its
 * own settings and brands). It must exit 0 with every window of the organization holding its current truth, and
 * every other organization byte for byte as before. Counted as the kind `organization-reset`.
 */
async function resetBetweenRuns(ep: Episode, random: Random): Promise<void> {
  const { tally } = ep;
  const index = random.int(ep.records.length);
  const record = ep.records[index] as OrganizationRecord;
  // A later run: the API no longer hands back a report that failed or vanished in the faulty runs.
  ep.sim.advanceTime(PAST_REUSE_MS);
  const ran = new Set([index]);
  const before = await snapshotOthers(ep, ran);
  const named: OrganizationRecord = { ...record, org: { ...record.org, via: 'flag' } };
  const args = argsOf(ep, named, ['--reset', '--yes']);
  const result = await runCli(args, envOf(ep, named.org));
  tally.runs += 1;
  add(tally.exits, exitLabel(result.code, result.signal));
  const who = `backfill --organization ${record.org.id} --reset`;
  const problems: string[] = [];
  if (result.code === 0 && result.summary?.reset !== undefined) {
    record.ledger.reset(record.brands);
    record.resets += 1;
    tally.organizations.resetsBetween += 1;
  } else problems.push(`${who} exited ${exitLabel(result.code, result.signal)}: ${lastError(result)}`);
  const check = await checkRun(ep, { ran, before, committed: new Map(), complete: problems.length === 0 });
  problems.push(...check.problems);
  const label = `organizations run ${tally.runs}`;
  tally.faults.record(label, ['organization-reset'], { 'organization-reset': problems.length === 0 ? 1 : 0 });
  report(tally, ep.options, `run ${tally.runs}: ${ep.label} ${who}, ${check.posts} posts`, problems, [
    result,
  ]);
}

/** A rename planned beside a faulty run: of an organization the run does not start. */
interface RenameBeside {
  readonly index: number;
  readonly from: string;
  readonly to: string;
  /** Its holdings before the run (asRenamed), which the new id must hold after it. */
  readonly holdings: string;
}

/**
 * Plans, now and then, a rename of an organization a faulty run does not start, made while the run is at work:
 * never beside faults that cut the connector's sessions (the rename's own would be cut too, and a rename cut short
 * is only finished by running it again).
 */
async function planRenameBeside(
  ep: Episode,
  random: Random,
  ran: ReadonlySet<number>,
  kinds: readonly FaultKind[],
): Promise<RenameBeside | null> {
  const others = await renamable(
    ep,
    ep.records.map((_, i) => i).filter((i) => !ran.has(i)),
  );
  if (!random.chance(0.3) || others.length === 0 || kinds.some((k) => SESSION_KINDS.includes(k))) return null;
  const index = random.pick(others);
  const from = ep.records[index]?.org.id ?? '';
  const to = renameTarget(random, from, ep.usedIds);
  return { index, from, to, holdings: await holdings(ep.admin, ep.schema, from, { asRenamed: true }) };
}

/**
 * Starts the rename once the simulator answered the run's first report creation (the run at work), or, if it never
 * does, once the run is over; `during` says which.
 */
function startRenameBeside(
  ep: Episode,
  beside: RenameBeside,
): { afterRun: () => Promise<{ result: CliResult; during: boolean }> } {
  const { args, env } = renameCommand(ep, beside.from, beside.to);
  let started: Promise<CliResult> | undefined;
  let during = false;
  const start = (): Promise<CliResult> => {
    started ??= runCli(args, env);
    return started;
  };
  const stop = ep.sim.onServed((kind) => {
    if (kind !== 'creation' || started !== undefined) return;
    during = true;
    void start();
  });
  return {
    afterRun: async () => {
      stop();
      return { result: await start(), during };
    },
  };
}

function describe(org: SoakOrganization, all: readonly SoakOrganization[]): string {
  const collides = all.filter((other) => other !== org && sameIds(org, other)).map((other) => other.id);
  const settings = [
    `seed ${org.seed}`,
    `${org.postsPerDay}/day`,
    `window ${org.windowDays}`,
    `concurrency ${org.concurrency}`,
    org.via === 'default' ? 'unnamed' : `by ${org.via}`,
    ...org.filterArgs,
    ...org.selectionArgs,
    ...(collides.length > 0 ? [`ids of ${collides.join('+')}`] : []),
  ];
  return `${org.id} (${settings.join(' ')})`;
}

/** One episode of the --organizations soak (see the module's comment). */
export async function organizationEpisode(
  index: number,
  random: Random,
  options: PhaseOptions,
  databaseUrl: string,
  admin: pg.Pool,
  tally: Tally,
): Promise<void> {
  const faultSeed = random.int(1_000_000);
  const organizations = drawOrganizations(random);
  const generationDelayMs = random.pick([0, 30, 100, 300]);
  const rich = richest(organizations);
  // Pages small enough for six to twelve a window of the organization with the most posts a window: page tokens
  // and reports can expire or vanish mid-window, even after a reset to a few brands (fewer pages for the others,
  // whose windows hold fewer posts).
  const most = postsPerWindow(organizations[rich] as SoakOrganization);
  const pageSize = Math.max(5, Math.floor(most / (6 + random.int(7))));
  const service = drawService(faultSeed);
  const sim = await startSimulator({
    seed: faultSeed,
    organizations: organizations.map((o) => ({ token: o.token, seed: o.seed, postsPerDay: o.postsPerDay })),
    generationDelayMs,
    pageSize,
    now: episodeStart(random),
    ...service.options,
  });
  const dir = mkdtempSync(join(tmpdir(), 'soak-organizations-'));
  try {
    const from = randomStart(random);
    const to = addDays(from, 13 + random.int(29));
    const schema = `soak_${index}`;
    const records = organizations.map((org): OrganizationRecord => {
      const grid = ownGrid(from, to, org.windowDays);
      const { selection } = org;
      const listed = selection.mode === 'all' ? [] : selection.fields;
      const keep =
        selection.mode === 'all'
          ? undefined
          : selection.mode === 'include'
            ? (field: string) => listed.includes(field)
            : (field: string) => !listed.includes(field);
      const ledger = new Ledger(sim, schema, { from, to }, grid, {
        org: org.id,
        token: org.token,
        filters: org.filters,
        ...(keep === undefined ? {} : { keep }),
      });
      return { org, grid, ledger, brands: null, resets: 0 };
    });
    const ep: Episode = {
      label: `episode ${index} (fault seed ${faultSeed}, pages of ${pageSize}, ${from}..${to}; ${organizations.map((o) => describe(o, organizations)).join('; ')}; ${service.label})`,
      sim,
      admin,
      options,
      tally,
      schema,
      from,
      to,
      records,
      richest: rich,
      baseEnv: cliEnv(sim, databaseUrl, CLEAN_ENV),
      dir,
      renames: [],
      usedIds: new Set(organizations.map((org) => org.id)),
    };
    tally.episodes += 1;
    const o = tally.organizations;
    add(o.perEpisode, String(organizations.length));
    for (const [i, a] of organizations.entries()) {
      for (const b of organizations.slice(i + 1)) if (sameIds(a, b)) o.collidingPairs += 1;
    }
    if (organizations.some((org) => org.via === 'default')) o.withDefault += 1;
    o.filtered += organizations.filter((org) => org.filterArgs.length > 0).length;
    o.selecting += organizations.filter((org) => org.selection.mode !== 'all').length;

    // More faulty runs than a plain episode: each ends with a clean run per organization.
    const faultyRuns = 2 + random.int(4);
    for (let r = 0; r < faultyRuns && plannedRuns(tally) < options.runs - 1; r += 1) {
      const plan = drawOrganizationRun(random, records.length);
      const failed = await faultyRun(ep, random, r, plan);
      // An organization whose run lost its database (exit 1) gets a run without faults, whose result is checked.
      for (const i of failed) {
        ep.sim.advanceTime(PAST_REUSE_MS);
        tally.recoveryRuns += 1;
        await cleanRun(ep, i, 'recovery run', [], false);
      }
      // Between runs, now and then, in turn: an organization renamed to an id of another form, or one reset.
      if (plannedRuns(tally) < options.runs - 1 && random.chance(0.5)) {
        const turn = o.betweenRuns;
        o.betweenRuns += 1;
        if (turn % 2 === 0) await renameBetweenRuns(ep, random);
        else await resetBetweenRuns(ep, random);
      }
    }
    // A later run: the API no longer hands back a report that failed or vanished in the faulty runs.
    ep.sim.advanceTime(PAST_REUSE_MS);
    if (options.organizationsFile === true) {
      tally.posts += await cleanFileRuns(ep);
      return;
    }
    for (const [i, record] of records.entries()) {
      // After late data, a clean --reload brings every window to the current truth (see soak.ts, cleanRuns).
      const finals = record.ledger.epoch > 0 ? [[], ['--reload']] : [[]];
      for (const [f, extra] of finals.entries()) {
        const last = f === finals.length - 1;
        const { posts } = await cleanRun(ep, i, 'clean run', extra, last);
        if (last) tally.posts += posts;
      }
    }
  } finally {
    await sim.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

/**
 * The episode's last runs with --organizations-file: one clean run of every organization through the file, and a
 * clean --reload of them all after late data (see soak.ts, cleanRuns); every organization must then hold its
 * current truth. Returns the posts verified.
 */
async function cleanFileRuns(ep: Episode): Promise<number> {
  const all = ep.records.map((_, i) => i);
  const finals = ep.records.some((r) => r.ledger.epoch > 0) ? [[], ['--reload']] : [[]];
  let posts = 0;
  for (const [f, extra] of finals.entries()) {
    const complete = f === finals.length - 1;
    const { args, env } = fileCommand(ep, all, extra);
    const result = await runCli(args, env);
    ep.tally.runs += 1;
    ep.tally.organizations.fileRuns += 1;
    add(ep.tally.exits, exitLabel(result.code, result.signal));
    const byOrg = committedByOrganization(result.stderr);
    const committed = new Map(
      all.map((i) => [i, byOrg.get(ep.records[i]?.org.id ?? '') ?? new Set<string>()]),
    );
    const check = await checkRun(ep, { ran: new Set(all), before: new Map(), committed, complete });
    const who = 'the clean run of every organization (--organizations)';
    const problems = [
      ...check.problems,
      ...summaryProblem(result, who),
      ...checkFileSummary(ep, all, result, new Set([0]), who).problems,
    ];
    if (result.code !== 0) {
      problems.push(`${who} exited ${exitLabel(result.code, result.signal)}: ${lastError(result)}`);
    }
    report(
      ep.tally,
      ep.options,
      `run ${ep.tally.runs}: ${ep.label} every organization through its file, clean${extra.length > 0 ? ` ${extra.join(' ')}` : ''}, ${check.posts} posts`,
      problems,
      [result],
    );
    if (complete) posts = check.posts;
  }
  return posts;
}
