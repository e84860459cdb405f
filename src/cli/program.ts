import { Command, Option } from 'commander';
import { type Flags, SETTINGS, type SettingName } from '../config.js';
import { ConfigError } from '../errors.js';
import { DEFAULT_FAULTS, REQUEST_FAULTS } from '../simulator/faults.js';
import { unsupportedNode, VERSION } from '../version.js';
import { COMPLETION_SHELLS, completionScript } from './completion.js';
import { interruptSignal } from './context.js';
import {
  API_ACCESS_FLAGS,
  API_FLAGS,
  addSettingFlags,
  COMMON_FLAGS,
  collectFlags,
  DB_FLAGS,
  DB_READ_FLAGS,
  RUN_FLAGS,
  settingsHelp,
  withExample,
} from './flags.js';
import { type Io, quietOnClosedPipe } from './run-output.js';
import { failUsage, reportUsageErrors } from './usage.js';

const progressOption = () =>
  new Option(
    '--progress-interval <seconds>',
    'seconds between progress log lines when stderr is not a terminal (a live bar otherwise)',
  ).default('10');

const jsonOption = () =>
  new Option('--json', 'print JSON (what a pipe gets) even on a terminal, where the output is for a person');

const quietOption = () =>
  new Option(
    '-q, --quiet',
    'only warnings and errors on stderr (no progress, no closing sentence); the summary line stays',
  );

const verboseOption = () =>
  new Option('-v, --verbose', 'every log line (level debug), on a terminal too').conflicts('quiet');

const summaryOption = () =>
  new Option(
    '--json',
    'print the JSON summary line on stdout on a terminal too (a pipe or a file always gets it)',
  );

/** The log level -q and -v stand for, unless --log-level says. */
function levelFlag(options: Record<string, unknown>): Flags {
  if (typeof options.logLevel === 'string') return {};
  if (options.verbose === true) return { logLevel: 'debug' };
  if (options.quiet === true) return { logLevel: 'warn' };
  return {};
}

/** --progress-interval in milliseconds; a bad value is a usage error (exit 2). */
function progressIntervalMs(io: Io, command: string, options: Record<string, unknown>): number {
  const text = String(options.progressInterval ?? '10');
  const seconds = Number(text);
  if (text.trim() === '' || !Number.isFinite(seconds) || seconds <= 0 || seconds > 86_400) {
    failUsage(
      io,
      command,
      `--progress-interval must be a number of seconds above 0, up to 86400, got ${JSON.stringify(text)}`,
    );
  }
  return Math.round(seconds * 1000);
}

/** A date option the command cannot run without (checked after commander has reported any misspelt option). */
function requiredDate(
  io: Io,
  command: string,
  options: Record<string, unknown>,
  name: 'from' | 'to',
): string {
  const value = options[name];
  if (typeof value !== 'string') failUsage(io, command, `required option '--${name} <date>' not specified`);
  return value;
}

/** The flags of sync, and of config, which shows the settings a run with them would use. */
const SYNC_FLAGS = [
  ...API_FLAGS,
  ...DB_FLAGS,
  ...RUN_FLAGS,
  'lookbackDays',
  'startDate',
  ...COMMON_FLAGS,
] as const;

function program(io: Io): Command {
  const root = new Command('post-reports-etl')
    .description('Loads the Post Reporting API v4 into PostgreSQL: exact, fast, resumable.')
    .version(VERSION, '-V, --version', 'print the version and exit')
    .addHelpText(
      'after',
      '\nSettings come from flags, the environment, a .env file and a --config file, in that order;\n`post-reports-etl help environment` lists their variables, `post-reports-etl config` those in force.\n',
    );
  for (const command of [
    demoCommandOf(io),
    ...runCommandsOf(io),
    ...adminCommandsOf(io),
    simulatorCommandOf(io),
  ]) {
    root.addCommand(command);
  }
  root.addCommand(
    withExample(
      new Command('completion'),
      'completion bash >> ~/.bashrc',
      'completion zsh >> ~/.zshrc',
      'completion fish > ~/.config/fish/completions/post-reports-etl.fish',
    )
      .description(`Print a shell completion script (${COMPLETION_SHELLS.join(', ')})`)
      .argument('[shell]', COMPLETION_SHELLS.join(', '), 'bash')
      .action((shell: string) => {
        const script = completionScript(root, shell);
        if (script === undefined) {
          failUsage(
            io,
            'completion',
            `no completion for ${JSON.stringify(shell)}: one of ${COMPLETION_SHELLS.join(', ')}`,
          );
        }
        io.stdout.write(script);
      }),
  );
  // `help environment`: the settings' variables, a topic of their own; `help <command>` as commander's.
  root.helpCommand(false);
  root.addCommand(
    new Command('help')
      .description("Help on a command, or on a topic: `help environment` lists every setting's variable")
      .argument('[topic]', 'a command, or environment')
      .action((topic: string | undefined) => {
        if (topic === 'environment') {
          io.stdout.write(settingsHelp());
          return;
        }
        const command = root.commands.find((c) => c.name() === topic || c.aliases().includes(topic ?? ''));
        if (topic !== undefined && command === undefined) {
          failUsage(io, 'help', `no command or topic ${JSON.stringify(topic)}: see post-reports-etl --help`);
        }
        io.stdout.write((command ?? root).helpInformation());
      }),
  );
  // Usage errors (unknown option, missing argument) share the configuration error's exit code, in every command.
  return reportUsageErrors(root, io);
}

/** backfill and sync. */
function runCommandsOf(io: Io): Command[] {
  const backfill = addSettingFlags(
    withExample(
      new Command('backfill'),
      'backfill --from 2026-01-01 --to 2026-03-31 --concurrency 4',
      'backfill --from 2026-01-01 --to 2026-01-31 --brands "Atlas Athletics" --schema atlas',
      'backfill --from 2026-02-01 --to 2026-02-28 --reload      # load those weeks again',
      'backfill --from 2026-01-01 --to 2026-03-31 --reset --yes 2>&1 | tee run.log',
      'backfill --from 2026-01-01 --to 2026-03-31 --organizations organizations.json   # every organization',
    )
      .description('Load every window of a date range (never moves the incremental cursor)')
      .option('--from <date>', 'first date, YYYY-MM-DD (required)')
      .option('--to <date>', 'last date, YYYY-MM-DD, inclusive (required)')
      .option('--reload', 'reload windows that are already loaded')
      .option(
        '--reset',
        "start over: clear the schema's data and state (says what first; asks on a terminal, needs --yes off one), then load the range",
      )
      .option(
        '--yes',
        'let --reset remove what is loaded without asking (needed when not on a terminal, a pipe or a scheduler)',
      )
      .addOption(progressOption())
      .addOption(quietOption())
      .addOption(verboseOption())
      .addOption(summaryOption()),
    [...API_FLAGS, ...DB_FLAGS, ...RUN_FLAGS, ...COMMON_FLAGS],
  ).action(async (options: Record<string, unknown>) => {
    const from = requiredDate(io, 'backfill', options, 'from');
    const to = requiredDate(io, 'backfill', options, 'to');
    const progress = progressIntervalMs(io, 'backfill', options);
    const { runCommand } = await import('./run-command.js');
    process.exitCode = await runCommand(
      io,
      'backfill',
      {
        ...collectFlags(options, [...API_FLAGS, ...DB_FLAGS, ...RUN_FLAGS, ...COMMON_FLAGS]),
        ...levelFlag(options),
      },
      {
        from,
        to,
        reload: options.reload === true,
        reset: options.reset === true,
        yes: options.yes === true,
      },
      { progressIntervalMs: progress, quiet: options.quiet === true, json: options.json === true },
    );
  });

  const sync = addSettingFlags(
    withExample(
      new Command('sync'),
      'sync --start-date 2026-01-01   # then every night: post-reports-etl sync',
      'sync --organization acme --schema post_reports -q',
      'sync --organizations organizations.json -q   # every organization of the file, in one run',
      'sync --reset --yes --start-date 2026-01-01   # start over, off a terminal',
    )
      .description('Incremental load: from the cursor minus the lookback up to today (UTC)')
      .option(
        '--reset',
        "start over: clear the schema's data and state (says what first; asks on a terminal, needs --yes off one), then load from --start-date",
      )
      .option(
        '--yes',
        'let --reset remove what is loaded without asking (needed when not on a terminal, a pipe or a scheduler)',
      )
      .addOption(progressOption())
      .addOption(quietOption())
      .addOption(verboseOption())
      .addOption(summaryOption()),
    SYNC_FLAGS,
  ).action(async (options: Record<string, unknown>) => {
    const progress = progressIntervalMs(io, 'sync', options);
    const { runCommand } = await import('./run-command.js');
    process.exitCode = await runCommand(
      io,
      'sync',
      { ...collectFlags(options, SYNC_FLAGS), ...levelFlag(options) },
      { reset: options.reset === true, yes: options.yes === true },
      { progressIntervalMs: progress, quiet: options.quiet === true, json: options.json === true },
    );
  });

  return [backfill, sync];
}

function demoCommandOf(io: Io): Command {
  return withExample(new Command('demo'), 'demo --days 7 --keep')
    .summary('Load 30 days from the simulator into a schema of its own, and show the rows')
    .description(
      'Start the API simulator and a database (--database-url, else an embedded PostgreSQL), load the last 30 days into a schema of its own, and show the rows',
    )
    .addOption(new Option('--days <n>', 'days to load, ending yesterday (UTC)').default('30'))
    .addOption(new Option('--schema <name>', 'schema to load into').default('demo'))
    .option(
      '--database-url <url>',
      `load here instead of an embedded PostgreSQL (never ${SETTINGS.databaseUrl.env}: the demo's schema is cleared on every run)`,
    )
    .option('--keep', 'keep the simulator and the database running after the load, until Ctrl-C')
    .option('--log-level <level>', `pino level [env ${SETTINGS.logLevel.env}, default info]`)
    .addOption(progressOption())
    .action(async (options: Record<string, unknown>) => {
      const days = Number(options.days);
      if (!Number.isInteger(days) || days < 1 || days > 366) {
        const error = new ConfigError(
          'CONFIG_INVALID',
          `--days must be an integer from 1 to 366, got ${JSON.stringify(options.days)}`,
        );
        io.stderr.write(`post-reports-etl: error: ${error.message}\n`);
        process.exitCode = 2;
        return;
      }
      const { demoCommand } = await import('./demo-command.js');
      process.exitCode = await demoCommand(io, {
        schema: String(options.schema),
        days,
        keep: options.keep === true,
        progressIntervalMs: progressIntervalMs(io, 'demo', options),
        ...(typeof options.databaseUrl === 'string' ? { databaseUrl: options.databaseUrl } : {}),
        ...(typeof options.logLevel === 'string' ? { logLevel: options.logLevel } : {}),
      });
    });
}

/** migrate, status, plan, dimensions and rename-organization. */
function adminCommandsOf(io: Io): Command[] {
  // Migrations and a rename are the schema's: no organization of its own.
  const schemaFlags = [...DB_FLAGS, 'postIdField', ...COMMON_FLAGS].filter(
    (name): name is Exclude<SettingName, 'organization' | 'organizations'> =>
      name !== 'organization' && name !== 'organizations',
  );
  const migrate = addSettingFlags(
    withExample(new Command('migrate'), 'migrate --schema post_reports')
      .description('Apply pending database migrations')
      .addOption(jsonOption()),
    schemaFlags,
  ).action(async (options: Record<string, unknown>) => {
    const { migrateCommand } = await import('./admin-commands.js');
    process.exitCode = await migrateCommand(io, collectFlags(options, schemaFlags), options.json === true);
  });

  const status = addSettingFlags(
    withExample(
      new Command('status'),
      'status --schema post_reports',
      'status --calendar --all-organizations',
      'status --html history.html --year 2026',
    )
      .description('Show windows loaded, failed and in progress, and the incremental cursor')
      .option(
        '--all-organizations',
        'every organization of the schema, one after another (JSON: a line each)',
      )
      .addOption(jsonOption().conflicts(['calendar', 'html']))
      .option(
        '--calendar',
        'draw each year as a grid of days (final, open, failed, in progress, never loaded), with a legend; plain text in a pipe',
      )
      .option('--html <file>', 'write the calendar and a row per loaded day as one self-contained HTML page')
      .option(
        '--year <yyyy>',
        'with --calendar or --html: that year only (default: every year from the first loaded)',
      ),
    [...DB_READ_FLAGS, ...COMMON_FLAGS],
  ).action(async (options: Record<string, unknown>) => {
    if (options.calendar === true || typeof options.html === 'string') {
      const { statusCalendarCommand } = await import('./calendar-command.js');
      process.exitCode = await statusCalendarCommand(
        io,
        collectFlags(options, [...DB_READ_FLAGS, ...COMMON_FLAGS]),
        {
          calendar: options.calendar === true,
          ...(typeof options.html === 'string' ? { html: options.html } : {}),
          ...(typeof options.year === 'string' ? { year: options.year } : {}),
          all: options.allOrganizations === true,
        },
      );
      return;
    }
    if (typeof options.year === 'string') failUsage(io, 'status', '--year needs --calendar or --html');
    const { statusCommand } = await import('./admin-commands.js');
    process.exitCode = await statusCommand(
      io,
      collectFlags(options, [...DB_READ_FLAGS, ...COMMON_FLAGS]),
      options.json === true,
      options.allOrganizations === true,
    );
  });

  const dimensions = addSettingFlags(
    withExample(new Command('dimensions'), 'dimensions --json')
      .description("Print the organization's valid filter values")
      .addOption(jsonOption()),
    [...API_ACCESS_FLAGS, ...COMMON_FLAGS],
  ).action(async (options: Record<string, unknown>) => {
    const { dimensionsCommand } = await import('./admin-commands.js');
    process.exitCode = await dimensionsCommand(
      io,
      collectFlags(options, [...API_ACCESS_FLAGS, ...COMMON_FLAGS]),
      options.json === true,
    );
  });

  const planFlags = [...DB_READ_FLAGS, 'windowDays', 'lookbackDays', 'startDate', ...COMMON_FLAGS] as const;
  const plan = addSettingFlags(
    withExample(new Command('plan'), 'plan --from 2026-01-01 --to 2026-03-31')
      .summary('Print the windows a backfill (or a sync) would load, with their state')
      .description(
        'Print the windows a backfill (or a sync, with --sync) would load, with their state (a table on a terminal, JSON lines otherwise); reads only',
      )
      .option('--from <date>', 'first date of the backfill, YYYY-MM-DD')
      .option('--to <date>', 'last date of the backfill, YYYY-MM-DD (inclusive)')
      .option('--reload', 'as a backfill --reload would')
      .option('--sync', 'what a sync would load now')
      .option(
        '--reset',
        'what a --reset would remove (first line), then the windows it would load; removes nothing',
      )
      .option('--all-organizations', "each organization of the schema in turn, its windows' lines naming it")
      .addOption(jsonOption()),
    planFlags,
  ).action(async (options: Record<string, unknown>) => {
    const { planCommand } = await import('./admin-commands.js');
    process.exitCode = await planCommand(io, collectFlags(options, planFlags), {
      ...(typeof options.from === 'string' ? { from: options.from } : {}),
      ...(typeof options.to === 'string' ? { to: options.to } : {}),
      reload: options.reload === true,
      sync: options.sync === true,
      reset: options.reset === true,
      json: options.json === true,
      allOrganizations: options.allOrganizations === true,
    });
  });

  const renameOrganization = addSettingFlags(
    withExample(
      new Command('rename-organization'),
      'rename-organization --from default --to acme --schema post_reports',
    )
      .summary("Move an organization's rows and state to another id")
      .description(
        "Move an organization's rows and state to another id, a month at a time; run it again if cut short (a schema loaded before organizations holds them under default)",
      )
      .requiredOption('--from <id>', 'the organization whose rows and state move')
      .requiredOption('--to <id>', 'the id they move to (one not in use)')
      .addOption(jsonOption()),
    schemaFlags,
  ).action(async (options: Record<string, unknown>) => {
    const { renameOrganizationCommand } = await import('./admin-commands.js');
    process.exitCode = await renameOrganizationCommand(io, collectFlags(options, schemaFlags), {
      from: String(options.from),
      to: String(options.to),
      json: options.json === true,
    });
  });

  const config = addSettingFlags(
    withExample(new Command('config'), 'config --schema post_reports')
      .alias('doctor')
      .summary('Show every setting in force and where it came from; check the API and the database')
      .description(
        'Show every setting in force, its value (secrets hidden) and where it came from, then check the API, the token, the database, the privileges and the pooler, one line each (exit 0 all well, 2 to fix)',
      )
      .addOption(jsonOption()),
    SYNC_FLAGS,
  ).action(async (options: Record<string, unknown>) => {
    const { configCommand } = await import('./config-command.js');
    process.exitCode = await configCommand(io, collectFlags(options, SYNC_FLAGS), options.json === true);
  });

  const sourcesFlags = ['databaseUrl', 'schema', ...COMMON_FLAGS] as const;
  const dbtSources = addSettingFlags(
    withExample(
      new Command('dbt-sources'),
      'dbt-sources > models/post_reports/sources.yml',
      'dbt-sources --schedule-hours 6 --schema post_reports',
      'dbt-sources --warn-after 30 --error-after 48',
    )
      .summary('Print a dbt sources.yml for the schema as loaded')
      .description(
        'Print a dbt sources.yml for the schema as loaded: its tables, every column described, and a freshness check from the schedule',
      )
      .option(
        '--schedule-hours <hours>',
        'hours between scheduled runs: dbt warns once a run is missed (1.5 times it), errors once two are (2.5 times)',
        '24',
      )
      .option('--warn-after <hours>', "dbt's warn_after, in whole hours (instead of the schedule's)")
      .option('--error-after <hours>', "dbt's error_after, in whole hours (instead of the schedule's)"),
    sourcesFlags,
  ).action(async (options: Record<string, unknown>) => {
    const { dbtSourcesCommand } = await import('./dbt-sources.js');
    const text = (name: string) => (typeof options[name] === 'string' ? { [name]: options[name] } : {});
    process.exitCode = await dbtSourcesCommand(io, collectFlags(options, sourcesFlags), {
      ...text('scheduleHours'),
      ...text('warnAfter'),
      ...text('errorAfter'),
    });
  });

  return [migrate, status, plan, dimensions, renameOrganization, config, dbtSources];
}

function simulatorCommandOf(io: Io): Command {
  const command = withExample(new Command('simulator'), 'simulator --port 8080 --seed 1')
    .description('Serve the Post Reporting API v4 simulator (for tests, benchmarks and demos)')
    .addOption(new Option('--port <n>', 'port (0: any free port)').default('8080'))
    .addOption(new Option('--host <host>', 'address to listen on').default('127.0.0.1'))
    .addOption(
      new Option('--seed <n>', 'data seed (with --organization: the seed of the faults)').default('1'),
    )
    .addOption(new Option('--token <token>', 'the bearer token it accepts (default: "sim-token")'))
    .addOption(
      new Option(
        '--organization <token:seed>',
        'serve an organization of its own under TOKEN, its data drawn from SEED (repeatable; instead of --token)',
      ).argParser((value: string, previous: string[] | undefined) => [...(previous ?? []), value]),
    )
    .addOption(new Option('--posts-per-day <n>', 'posts dated each day').default('50'))
    .addOption(new Option('--generation-delay-ms <n>', 'how long a report stays IN_PROGRESS').default('0'))
    .addOption(new Option('--latency-ms <n>', 'latency added to every response').default('0'))
    .addOption(
      new Option('--fail-report-share <x>', 'share of reports that end FAILED').default(
        String(DEFAULT_FAULTS.failReportShare),
      ),
    )
    .action(async (options: Record<string, unknown>) => {
      const { simulatorCommand } = await import('./simulator-command.js');
      process.exitCode = await simulatorCommand(io, options);
    });
  for (const fault of REQUEST_FAULTS) {
    command.addOption(
      new Option(`--${fault.flag} <x>`, fault.description).default(String(DEFAULT_FAULTS[fault.share])),
    );
  }
  return command;
}

/** Runs the CLI: signal handlers and pipe handling are installed here, never on import. */
export async function main(argv: readonly string[]): Promise<void> {
  const io: Io = {
    stdin: process.stdin,
    stdout: process.stdout,
    stderr: process.stderr,
    signal: interruptSignal(),
  };
  quietOnClosedPipe(process.stdout);
  quietOnClosedPipe(process.stderr);
  const supported = unsupportedNode();
  if (supported !== undefined) {
    io.stderr.write(
      `post-reports-etl: warning: Node ${process.versions.node} is older than this version supports (${supported}): its commands run, its tests and benchmark do not; upgrade Node\n`,
    );
  }
  await program(io).parseAsync([...argv]);
}
