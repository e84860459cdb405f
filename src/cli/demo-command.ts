import pg from 'pg';
import { type Flags, type RawSettings, readEnvironment, SETTINGS } from '../config.js';
import { type DemoDatabase, openDemoDatabase } from '../demo/demo-database.js';
import {
  postsPerSegmentQuery,
  preflightVersusInflightQuery,
  renderQuery,
  sampleRowsQuery,
  spendByBrandAndWeekQuery,
} from '../demo/demo-queries.js';
import { claimDemoSchema } from '../demo/demo-schema.js';
import { addDays, todayUtc } from '../model/dates.js';
import { startSimulator } from '../simulator/server.js';
import { runWithProgress } from './run-command.js';
import { classify, type Io, plural, printError } from './run-output.js';

export interface DemoOptions {
  /** Schema to load into (default `demo`). */
  readonly schema: string;
  /** Days to load, ending yesterday (UTC). */
  readonly days: number;
  /** Keep the simulator and an embedded database running after the load, until Ctrl-C. */
  readonly keep: boolean;
  readonly progressIntervalMs: number;
  readonly databaseUrl?: string;
  readonly logLevel?: string;
}

/**
 * `demo`: starts a database (--database-url, else an embedded PostgreSQL) and the API simulator in-process, runs
 * a backfill of the last `days` days with progress, then prints loaded rows and queries to try.
 */
export async function demoCommand(io: Io, options: DemoOptions): Promise<number> {
  const note = (line: string) => io.stderr.write(`post-reports-etl demo: ${line}\n`);
  const userEnv = readEnvironment();
  let stopDatabase = async () => {};
  let stopSimulator = async () => {};
  try {
    // The database first: when none can start, the one line saying why is all the demo prints.
    // Only a database named on the command line: DATABASE_URL (or .env) is where real loads go.
    const database = await openDemoDatabase(options.databaseUrl, io.signal);
    stopDatabase = () => database.stop();
    const schema = await claimDemoSchema(database.url, options.schema);
    const simulator = await startSimulator({ seed: 1, postsPerDay: 50, generationDelayMs: 1000 });
    stopSimulator = () => simulator.close();
    note(`API simulator serving ${simulator.baseUrl}`);
    note(
      `loading into ${database.kind === 'embedded' ? 'an embedded PostgreSQL' : redact(database.url)}, schema "${options.schema}"`,
    );

    const to = addDays(todayUtc(), -1);
    const from = addDays(to, -(options.days - 1));
    const { env, flags } = demoSettings(io, options, userEnv, database.url, simulator);
    const outcome = await runWithProgress(
      io,
      'backfill',
      flags,
      { from, to, reload: true, reset: schema === 'demo', yes: true },
      { env, progressIntervalMs: options.progressIntervalMs, printSummary: false },
    );
    const summary = outcome.summary;
    if (summary === undefined) return outcome.exitCode;
    io.stdout.write(
      `\nLoaded ${summary.posts} posts from ${summary.from} to ${summary.to} in ${plural(summary.windows.loaded, 'window')} (${(summary.durationMs / 1000).toFixed(1)} s): ${summary.status}\n`,
    );

    await showRows(io, database, options.schema, options.keep);
    if (options.keep) await keepRunning(io, database, simulator);
    else if (database.kind === 'embedded') {
      note('the embedded database is deleted on exit; pass --keep to query it while the demo waits');
    }
    return summary.exitCode;
  } catch (error) {
    printError(io, error);
    return classify(error).exitCode;
  } finally {
    await stopDatabase();
    await stopSimulator();
  }
}

// Sample queries over the loaded rows, and one to try by hand while it can be.
async function showRows(io: Io, database: DemoDatabase, schema: string, keep: boolean): Promise<void> {
  const client = new pg.Client({ connectionString: database.url });
  // A connection lost while idle must not crash the process: the query awaiting it fails and says why.
  client.on('error', () => {});
  await client.connect();
  try {
    for (const query of [
      sampleRowsQuery(schema),
      spendByBrandAndWeekQuery(schema),
      postsPerSegmentQuery(schema),
      preflightVersusInflightQuery(schema),
    ]) {
      // Each query is shown before its result: what to type to read the latest row of each post.
      io.stdout.write(`\n-- ${query.title}\n${query.sql};\n\n${await renderQuery(client, query, 8)}\n`);
    }
  } finally {
    await client.end();
  }
  // An embedded database is deleted on exit: a psql line for it is only worth printing while it waits.
  if (keep || database.kind === 'given') {
    const query = spendByBrandAndWeekQuery(schema).sql.replace(/\s+/g, ' ');
    const where = database.kind === 'embedded' ? database.url : redact(database.url);
    io.stdout.write(`\nA query to try (psql '${where}'):\n  ${query};\n`);
  }
}

async function keepRunning(
  io: Io,
  database: DemoDatabase,
  simulator: { readonly baseUrl: string; readonly token: string },
): Promise<void> {
  const note = (line: string) => io.stderr.write(`post-reports-etl demo: ${line}\n`);
  note(
    `keeping the simulator (${simulator.baseUrl}, token ${simulator.token}) and the database up: Ctrl-C to stop`,
  );
  if (database.kind === 'embedded') note(`database: ${database.url}`);
  const signal = io.signal;
  await new Promise<void>((resolve) => signal.addEventListener('abort', () => resolve(), { once: true }));
}

// Only the demo's own settings: filters or an API set in the shell are for real runs, not for the simulator.
function demoSettings(
  io: Io,
  options: DemoOptions,
  userEnv: RawSettings,
  databaseUrl: string,
  simulator: { readonly baseUrl: string; readonly token: string },
): { env: Record<string, string>; flags: Flags } {
  const env = {
    [SETTINGS.baseUrl.env]: simulator.baseUrl,
    [SETTINGS.token.env]: simulator.token,
    [SETTINGS.databaseUrl.env]: databaseUrl,
    [SETTINGS.schema.env]: options.schema,
    [SETTINGS.pollInitialMs.env]: '200',
    [SETTINGS.pollMaxMs.env]: '1000',
    ...pick(userEnv, [SETTINGS.logLevel.env, SETTINGS.logFormat.env]),
  };
  // On a terminal the progress bar tells the story; the info lines would scroll it away.
  const quiet =
    (io.stderr as Partial<NodeJS.WriteStream>).isTTY === true && userEnv[SETTINGS.logLevel.env] === undefined;
  const logLevel = options.logLevel ?? (quiet ? 'warn' : undefined);
  const flags: Flags = logLevel === undefined ? {} : { logLevel };
  return { env, flags };
}

function pick(
  env: Readonly<Record<string, string | undefined>>,
  names: readonly string[],
): Record<string, string> {
  const out: Record<string, string> = {};
  for (const name of names) {
    const value = env[name];
    if (value !== undefined) out[name] = value;
  }
  return out;
}

/** A connection string without its password, for display. */
function redact(url: string): string {
  try {
    const parsed = new URL(url);
    if (parsed.password !== '') parsed.password = '***';
    return parsed.toString();
  } catch {
    return 'the database given';
  }
}
