#!/usr/bin/env node
import { Command, Option } from 'commander';
import { dimensionsCommand, migrateCommand, statusCommand } from './admin-commands.js';
import { API_FLAGS, addSettingFlags, collectFlags, DB_FLAGS, LOG_FLAGS, RUN_FLAGS } from './flags.js';
import { runCommand } from './run-command.js';
import type { Io } from './run-output.js';
import { simulatorCommand } from './simulator-command.js';

const io: Io = { stdout: process.stdout, stderr: process.stderr };

function program(): Command {
  const root = new Command('post-reports-etl')
    .description('Loads the Post Reporting API v4 into PostgreSQL: exact, fast, resumable.')
    .showHelpAfterError()
    .configureOutput({ writeErr: (text) => io.stderr.write(text) })
    .exitOverride((error) => {
      // Usage errors (unknown option, missing argument) share the configuration error's exit code.
      process.exit(error.exitCode === 0 ? 0 : 2);
    });

  const backfill = addSettingFlags(
    new Command('backfill')
      .description('Load every window of a date range (never moves the incremental cursor)')
      .requiredOption('--from <date>', 'first date, YYYY-MM-DD')
      .requiredOption('--to <date>', 'last date, YYYY-MM-DD (inclusive)')
      .option('--reload', 'reload windows that are already loaded')
      .option('--reset', 'clear the schema if it was loaded with other filters'),
    [...API_FLAGS, ...DB_FLAGS, ...RUN_FLAGS, ...LOG_FLAGS],
  ).action(async (options: Record<string, unknown>) => {
    process.exitCode = await runCommand(
      io,
      'backfill',
      collectFlags(options, [...API_FLAGS, ...DB_FLAGS, ...RUN_FLAGS, ...LOG_FLAGS]),
      {
        from: String(options.from),
        to: String(options.to),
        reload: options.reload === true,
        reset: options.reset === true,
      },
    );
  });

  const syncFlags = [
    ...API_FLAGS,
    ...DB_FLAGS,
    ...RUN_FLAGS,
    'lookbackDays',
    'startDate',
    ...LOG_FLAGS,
  ] as const;
  const sync = addSettingFlags(
    new Command('sync')
      .description('Incremental load: from the cursor minus the lookback up to today (UTC)')
      .option('--reset', 'clear the schema if it was loaded with other filters'),
    syncFlags,
  ).action(async (options: Record<string, unknown>) => {
    process.exitCode = await runCommand(io, 'sync', collectFlags(options, syncFlags), {
      reset: options.reset === true,
    });
  });

  const migrate = addSettingFlags(new Command('migrate').description('Apply pending database migrations'), [
    ...DB_FLAGS,
    'postIdField',
    ...LOG_FLAGS,
  ]).action(async (options: Record<string, unknown>) => {
    process.exitCode = await migrateCommand(
      io,
      collectFlags(options, [...DB_FLAGS, 'postIdField', ...LOG_FLAGS]),
    );
  });

  const status = addSettingFlags(
    new Command('status')
      .description('Show windows loaded, failed and in progress, and the incremental cursor')
      .option('--json', 'print JSON instead of a table'),
    [...DB_FLAGS, ...LOG_FLAGS],
  ).action(async (options: Record<string, unknown>) => {
    process.exitCode = await statusCommand(
      io,
      collectFlags(options, [...DB_FLAGS, ...LOG_FLAGS]),
      options.json === true,
    );
  });

  const dimensions = addSettingFlags(
    new Command('dimensions').description("Print the organization's valid filter values"),
    [...API_FLAGS, ...LOG_FLAGS],
  ).action(async (options: Record<string, unknown>) => {
    process.exitCode = await dimensionsCommand(io, collectFlags(options, [...API_FLAGS, ...LOG_FLAGS]));
  });

  const simulator = new Command('simulator')
    .description('Serve the Post Reporting API v4 simulator (for tests, benchmarks and demos)')
    .addOption(new Option('--port <n>', 'port (0: any free port)').default('8080'))
    .addOption(new Option('--host <host>', 'address to listen on').default('127.0.0.1'))
    .addOption(new Option('--seed <n>', 'data seed').default('1'))
    .addOption(new Option('--token <token>', 'the bearer token it accepts').default('sim-token'))
    .addOption(new Option('--posts-per-day <n>', 'posts dated each day').default('50'))
    .addOption(new Option('--generation-delay-ms <n>', 'how long a report stays IN_PROGRESS').default('0'))
    .addOption(new Option('--latency-ms <n>', 'latency added to every response').default('0'))
    .addOption(new Option('--rate-limit-share <x>', 'share of requests answered 429').default('0'))
    .addOption(new Option('--server-error-share <x>', 'share of requests answered 5xx').default('0'))
    .addOption(new Option('--drop-share <x>', 'share of connections dropped').default('0'))
    .addOption(new Option('--fail-report-share <x>', 'share of reports that end FAILED').default('0'))
    .action(async (options: Record<string, string>) => {
      process.exitCode = await simulatorCommand(io, options);
    });

  return root
    .addCommand(backfill)
    .addCommand(sync)
    .addCommand(migrate)
    .addCommand(status)
    .addCommand(dimensions)
    .addCommand(simulator);
}

await program().parseAsync(process.argv);
