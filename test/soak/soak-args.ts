/** One part of a soak: its runs, plain, concurrent or of several organizations. */
export interface SoakPhase {
  readonly runs: number;
  /** Each faulty run starts 2 to 4 processes at once on the episode's schema (a --reset run stays alone). */
  readonly concurrent: boolean;
  /**
   * Each episode's schema is loaded by 2 to 5 organizations, each with its own token (org-episode.ts); a faulty
   * run is one organization's, or several organizations' at once.
   */
  readonly organizations: boolean;
  /**
   * With `organizations`: a faulty run of several organizations is one process, `--organizations FILE`, and each
   * episode ends with one clean run of them all through the file (organization-episode.ts).
   */
  readonly organizationsFile?: boolean;
}

/** What one soak does: replayable from its seed. */
export interface SoakOptions {
  readonly seed: number;
  /** Each phase draws from the seed afresh: `--seed N --runs M [--concurrent | --organizations]` replays one alone. */
  readonly phases: readonly SoakPhase[];
  /** Harness guard: a CLI run still alive after this is killed and counted as a hang. */
  readonly runGuardMs: number;
  readonly databaseUrl: string;
  readonly verbose: boolean;
  /** The share of the runs that planned a kind in which it must strike (none at all always fails the soak). */
  readonly minStruckShare: number;
}

/** What the runs of one phase see. */
export type PhaseOptions = SoakPhase & Pick<SoakOptions, 'seed' | 'runGuardMs' | 'verbose'>;

const DEFAULT_DATABASE_URL = 'postgres://postgres@127.0.0.1:5432/postgres';

/** A planned fault may miss a run only where the run ended, or failed its windows, before the fault's moment. */
const MIN_STRUCK_SHARE = 0.8;

/**
 * `--ci`: 40 plain runs (about 136 s), then 15 concurrent ones (about a minute), always from this seed: CI plans
 * the same faults on every run, and a failure replays with `npm run soak:ci`.
 */
export const CI_SEED = 20_261_125;

const CI_PHASES: readonly SoakPhase[] = [
  { runs: 40, concurrent: false, organizations: false },
  { runs: 15, concurrent: true, organizations: false },
];

/** `--ci --organizations`: a short phase of several organizations a schema, from CI_SEED too. */
const CI_ORGANIZATION_PHASES: readonly SoakPhase[] = [{ runs: 20, concurrent: false, organizations: true }];

/**
 * `--ci --organizations-file`: as short, the organizations of a run in one process through their file; from
 * CI_SEED it renames organizations between runs and beside a run, and resets one, each at least once.
 */
const CI_ORGANIZATIONS_FILE_PHASES: readonly SoakPhase[] = [
  { runs: 20, concurrent: false, organizations: true, organizationsFile: true },
];

function integerArg(name: string, text: string | undefined): number {
  const value = text !== undefined && /^\d+$/.test(text) ? Number(text) : Number.NaN;
  if (!Number.isSafeInteger(value)) throw new RangeError(`${name} needs a non-negative integer, got ${text}`);
  return value;
}

/**
 * `--seed N` (default: drawn and printed), `--runs M` (default 300), `--concurrent`, `--organizations` or
 * `--organizations-file` (several organizations, a run of several of them one process through their file),
 * `--verbose`; or `--ci` (40 plain runs, then 15 concurrent ones, whose faults are tallied as one soak; seed
 * CI_SEED unless given), or `--ci --organizations` (20 runs of several organizations a schema).
 * The server comes from TEST_DATABASE_URL, else the local default.
 */
export function parseSoakArgs(argv: readonly string[], env: NodeJS.ProcessEnv): SoakOptions {
  let seed: number | undefined;
  let runs: number | undefined;
  let verbose = false;
  let concurrent = false;
  let organizations = false;
  let organizationsFile = false;
  let ci = false;
  for (let i = 0; i < argv.length; i += 1) {
    const arg = argv[i];
    if (arg === '--') continue;
    if (arg === '--seed') seed = integerArg('--seed', argv[++i]);
    else if (arg === '--runs') runs = integerArg('--runs', argv[++i]);
    else if (arg === '--ci') ci = true;
    else if (arg === '--concurrent') concurrent = true;
    else if (arg === '--organizations') organizations = true;
    else if (arg === '--organizations-file') organizationsFile = true;
    else if (arg === '--verbose') verbose = true;
    else {
      throw new RangeError(
        `unknown soak argument ${JSON.stringify(arg)} (--seed N --runs M --concurrent|--organizations|--organizations-file --verbose, or --ci [--organizations|--organizations-file])`,
      );
    }
  }
  if (ci && (runs !== undefined || concurrent)) {
    throw new RangeError('--ci sets the runs itself: pass it without --runs and --concurrent');
  }
  if ([concurrent, organizations, organizationsFile].filter(Boolean).length > 1) {
    throw new RangeError(
      '--concurrent, --organizations and --organizations-file are three modes: pass one of them',
    );
  }
  const ciPhases = organizationsFile
    ? CI_ORGANIZATIONS_FILE_PHASES
    : organizations
      ? CI_ORGANIZATION_PHASES
      : CI_PHASES;
  const phase: SoakPhase = organizationsFile
    ? { runs: runs ?? 300, concurrent: false, organizations: true, organizationsFile: true }
    : { runs: runs ?? 300, concurrent, organizations };
  return {
    seed: seed ?? (ci ? CI_SEED : Math.floor(Math.random() * 2 ** 31)),
    phases: ci ? ciPhases : [phase],
    runGuardMs: 90_000,
    databaseUrl: env.TEST_DATABASE_URL ?? DEFAULT_DATABASE_URL,
    verbose,
    minStruckShare: MIN_STRUCK_SHARE,
  };
}
