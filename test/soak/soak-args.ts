/** What one soak does: replayable from its seed. */
export interface SoakOptions {
  readonly seed: number;
  readonly runs: number;
  /** Harness guard: a CLI run still alive after this is killed and counted as a hang. */
  readonly runGuardMs: number;
  readonly databaseUrl: string;
  readonly verbose: boolean;
}

const DEFAULT_DATABASE_URL = 'postgres://postgres@127.0.0.1:5432/postgres';

function integerArg(name: string, text: string | undefined): number {
  const value = text !== undefined && /^\d+$/.test(text) ? Number(text) : Number.NaN;
  if (!Number.isSafeInteger(value)) throw new RangeError(`${name} needs a non-negative integer, got ${text}`);
  return value;
}

/**
 * `--seed N` (default: drawn and printed), `--runs M` (default 300), `--ci` (30+ short runs), `--verbose`.
 * The server comes from TEST_DATABASE_URL, else the local default.
 */
export function parseSoakArgs(argv: readonly string[], env: NodeJS.ProcessEnv): SoakOptions {
  let seed = Math.floor(Math.random() * 2 ** 31);
  let runs = 300;
  let verbose = false;
  for (let i = 0; i < argv.length; i += 1) {
    const arg = argv[i];
    if (arg === '--') continue;
    if (arg === '--seed') seed = integerArg('--seed', argv[++i]);
    else if (arg === '--runs') runs = integerArg('--runs', argv[++i]);
    else if (arg === '--ci') runs = 40;
    else if (arg === '--verbose') verbose = true;
    else
      throw new RangeError(`unknown soak argument ${JSON.stringify(arg)} (--seed N --runs M --ci --verbose)`);
  }
  return {
    seed,
    runs,
    runGuardMs: 90_000,
    databaseUrl: env.TEST_DATABASE_URL ?? DEFAULT_DATABASE_URL,
    verbose,
  };
}
