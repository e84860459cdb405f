import { mkdirSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { CliResult } from '../helpers/cli.js';
import type { FaultTally } from './fault-tally.js';
import type { PhaseOptions } from './soak-args.js';

/** What the concurrent runs add to the tally. */
export interface ConcurrentTally {
  runs: number;
  processesPerRun: Record<string, number>;
  shapes: Record<string, number>;
  /** Exit codes of the processes of concurrent runs. */
  exits: Record<string, number>;
  /** Each run's exit codes, sorted: `0 0 3`. */
  exitSets: Record<string, number>;
  byOthers: number;
  duplicates: number;
  duplicatesAfterCut: number;
  lockHeld: number;
  /** --reset runs (alone) that exited 4: allowed, and reported. */
  resetLockHeld: number;
  unknownReports: number;
  syncsReplaced: number;
  /** Creation calls the simulator answered, and those the proxy handed back: the proxy saw every process. */
  simulatorCreations: number;
  proxyCreations: number;
}

export interface Tally {
  runs: number;
  faultyRuns: number;
  recoveryRuns: number;
  episodes: number;
  discrepancies: number;
  faults: FaultTally;
  /** Runs of several organizations at once (--organizations): which process a fault finds first varies. */
  faultsAtOnce: FaultTally;
  exits: Record<string, number>;
  posts: number;
  failures: string[];
  concurrent: ConcurrentTally;
  organizations: OrganizationTally;
}

/** What the runs of several organizations a schema add to the tally (--organizations). */
export interface OrganizationTally {
  /** Episodes by their number of organizations. */
  readonly perEpisode: Record<string, number>;
  /** Pairs of an episode's organizations served the same post ids (seeds 97 apart). */
  collidingPairs: number;
  /** Episodes with the default organization (runs naming none) among their organizations. */
  withDefault: number;
  /** Organizations with filters of their own, and with a field selection of their own. */
  filtered: number;
  selecting: number;
  /** Faulty runs of one organization, and of several at once (by their number of organizations). */
  soloRuns: number;
  readonly atOnce: Record<string, number>;
  /** --reset runs of one organization that completed: alone, or alongside other organizations' runs. */
  resetsAlone: number;
  resetsAlongside: number;
  /** Organizations a run did not touch whose rows and state were compared with their snapshot. */
  untouchedChecked: number;
  /** Runs of several organizations in one process through their file (--organizations-file). */
  fileRuns: number;
  /** How the organizations of those runs ended, by their own exit codes in the summary. */
  readonly fileEnds: Record<string, number>;
  /** Renames or resets made between runs (each its own run), in turn. */
  betweenRuns: number;
  /** Renames done between runs; beside a faulty run of others, while it was at work or (it ended first) after it. */
  renames: number;
  renamesBeside: number;
  renamesAfter: number;
  /** Resets of one organization over its range, its settings unchanged, between runs. */
  resetsBetween: number;
}

export function add(counts: Record<string, number>, key: string, n = 1): void {
  counts[key] = (counts[key] ?? 0) + n;
}

function logsDir(options: PhaseOptions): string {
  const mode = options.concurrent
    ? '-concurrent'
    : options.organizationsFile === true
      ? '-organizations-file'
      : options.organizations
        ? '-organizations'
        : '';
  return join(tmpdir(), `post-reports-soak-${options.seed}${mode}`);
}

/** Keeps what a failed run's processes printed, for whoever looks into it: the directory. */
function keepLogs(options: PhaseOptions, run: number, results: readonly CliResult[]): string {
  const dir = logsDir(options);
  mkdirSync(dir, { recursive: true });
  for (const [i, result] of results.entries()) {
    writeFileSync(join(dir, `run-${run}-process-${i}.log`), `${result.stderr}\n--- stdout\n${result.stdout}`);
  }
  return dir;
}

/** Counts a run's problems as discrepancies and prints them (with where its processes' output is kept). */
export function report(
  tally: Tally,
  options: PhaseOptions,
  line: string,
  problems: readonly string[],
  results: readonly CliResult[],
): void {
  if (problems.length > 0) {
    tally.discrepancies += problems.length;
    const logs = `the processes' output: ${keepLogs(options, tally.runs, results)}/run-${tally.runs}-process-*.log`;
    const text = `${line}\n    ${[...problems.slice(0, 10), logs].join('\n    ')}`;
    tally.failures.push(text);
    console.log(`soak: FAIL ${text}`);
  } else if (options.verbose) console.log(`soak: ok ${line}`);
}

/**
 * The runs the seed plans: recovery runs (after a run lost its database, which depends on timing) come on top, so
 * that they never change what is planned after them.
 */
export function plannedRuns(tally: Tally): number {
  return tally.runs - tally.recoveryRuns;
}

/** `faultsAtOnce`: the tally of runs of several organizations at once, whose misses vary with timing. */
export function newTally(faults: FaultTally, faultsAtOnce: FaultTally): Tally {
  return {
    runs: 0,
    faultyRuns: 0,
    recoveryRuns: 0,
    episodes: 0,
    discrepancies: 0,
    faults,
    faultsAtOnce,
    exits: {},
    posts: 0,
    failures: [],
    concurrent: {
      runs: 0,
      processesPerRun: {},
      shapes: {},
      exits: {},
      exitSets: {},
      byOthers: 0,
      duplicates: 0,
      duplicatesAfterCut: 0,
      lockHeld: 0,
      resetLockHeld: 0,
      unknownReports: 0,
      syncsReplaced: 0,
      simulatorCreations: 0,
      proxyCreations: 0,
    },
    organizations: {
      perEpisode: {},
      collidingPairs: 0,
      withDefault: 0,
      filtered: 0,
      selecting: 0,
      soloRuns: 0,
      atOnce: {},
      resetsAlone: 0,
      resetsAlongside: 0,
      untouchedChecked: 0,
      fileRuns: 0,
      fileEnds: {},
      betweenRuns: 0,
      renames: 0,
      renamesBeside: 0,
      renamesAfter: 0,
      resetsBetween: 0,
    },
  };
}
