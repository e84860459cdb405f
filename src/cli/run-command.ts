import {
  type Flags,
  type OpenLineageConfig,
  type PushgatewayConfig,
  type RawSettings,
  SETTINGS,
} from '../config.js';
import { ConfigError } from '../errors.js';
import { databaseWhere } from '../load/connection-error.js';
import { backfill, backfillRange } from '../pipeline/backfill.js';
import { type OrganizationRun, runOrganizations } from '../pipeline/organizations.js';
import type { RunSummary } from '../pipeline/run-summary.js';
import { sync } from '../pipeline/sync.js';
import { terminalSafe } from '../secret.js';
import { type CommandContext, commandContext } from './context.js';
import { type MetricsRun, type MetricsTarget, writeMetricsFile, writeMetricsFileOf } from './metrics-file.js';
import type { LineageEnd, LineageRun } from './openlineage.js';
import { createProgressReporter, type ProgressReporter } from './progress-reporter.js';
import {
  classify,
  closingSentence,
  describeTarget,
  failureSummary,
  type Io,
  plural,
  printError,
  printSummary,
  type RunTarget,
} from './run-output.js';

export interface RunArgs {
  readonly from?: string;
  readonly to?: string;
  readonly reload?: boolean;
  readonly reset?: boolean;
  /** Do not ask before a --reset on a terminal. */
  readonly yes?: boolean;
}

export interface RunOptions {
  /** Seconds between progress log lines when stderr is not a terminal (0: only the first). */
  readonly progressIntervalMs: number;
  /** The settings to use instead of the process environment. */
  readonly env?: RawSettings;
  /** Print the JSON summary line on stdout (default true; the demo prints its own report). */
  readonly printSummary?: boolean;
  /** Only warnings and errors on stderr: no progress, no closing sentence. */
  readonly quiet?: boolean;
  /** The JSON summary line on a terminal too (a pipe or a file always gets it). */
  readonly json?: boolean;
}

export interface RunOutcome {
  readonly exitCode: number;
  /** The run's summary; absent when the run could not start. */
  readonly summary?: RunSummary;
}

/** Runs backfill or sync with progress, prints the summary line on stdout, and returns the exit code. */
export async function runCommand(
  io: Io,
  command: 'backfill' | 'sync',
  flags: Flags,
  args: RunArgs,
  options: RunOptions,
): Promise<number> {
  return (await runWithProgress(io, command, flags, args, options)).exitCode;
}

/** runCommand's work, returning the summary too. */
export async function runWithProgress(
  io: Io,
  command: 'backfill' | 'sync',
  flags: Flags,
  args: RunArgs,
  options: RunOptions,
): Promise<RunOutcome> {
  const started = Date.now();
  const signal = io.signal;
  const quiet = options.quiet ?? false;
  const progress = await createProgressReporter(io.stderr, options.progressIntervalMs, quiet);
  // A person at a terminal reads the closing sentence; a pipe, a file or --json gets the JSON summary line.
  const print = options.printSummary ?? true;
  // Known once the configuration is read: what is printed outside the log is scrubbed like the log.
  let scrub = (text: string): string => text;
  // Known once the settings are read: a run whose settings are wrong has nowhere to write its metrics.
  let metrics: MetricsOutputs | undefined;
  const printJson =
    print && (options.json === true || (io.stdout as Partial<NodeJS.WriteStream>).isTTY !== true);
  let target: RunTarget | undefined;
  // Known once the settings are read: the run's lineage, whose START went out and whose end must follow.
  let lineage: { readonly config: OpenLineageConfig; readonly run: LineageRun } | undefined;
  try {
    const settings: Flags = quiet && flags.logLevel === undefined ? { ...flags, logLevel: 'warn' } : flags;
    const context = commandContext(settings, { api: true, db: true }, signal, {
      terminalLevel: 'warn',
      ...(options.env === undefined ? {} : { env: options.env }),
      ...(progress.logSink === undefined ? {} : { logSink: progress.logSink }),
    });
    scrub = context.scrub;
    if (context.config.organizations !== undefined) {
      return await runEveryOrganization(io, command, context, args, progress, {
        print,
        printJson,
        quiet,
      });
    }
    const { metricsFile, pushgateway } = context.config.run;
    if (metricsFile !== undefined || pushgateway !== undefined) {
      metrics = {
        ...(metricsFile === undefined ? {} : { path: metricsFile }),
        ...(pushgateway === undefined ? {} : { pushgateway }),
        target: { schema: context.config.db.schema, organization: context.config.db.organization },
      };
    }
    const { config } = context;
    if (config.run.openLineage !== undefined) {
      const { lineageRun } = await import('./openlineage.js');
      const run = lineageRun(command, config.db.schema, config.db.organization, config.db.url.reveal());
      lineage = { config: config.run.openLineage, run };
      await sendLineage(io, lineage, undefined, scrub);
    }
    target = {
      database: databaseWhere(config.db.url.reveal()),
      schema: config.db.schema,
      organization: config.db.organization,
    };
    context.logger.info(target, `loading into ${describeTarget(target)}`);
    if (args.reset === true) {
      // Loaded when asked for, as the live bar is: a scheduled run does not load a prompt.
      const { confirmReset } = await import('./reset-confirm.js');
      await confirmReset(io, context.config, context.logger, args.yes ?? false);
    }
    const run = { ...context, onProgress: progress.start(context.logger) };
    const summary =
      command === 'backfill'
        ? await backfill({
            ...run,
            from: args.from ?? '',
            to: args.to ?? '',
            reload: args.reload ?? false,
            reset: args.reset ?? false,
          })
        : await sync({ ...run, reset: args.reset ?? false });
    progress.stop();
    // Messages may quote the API: scrubbed, and their control characters shown, not obeyed.
    const safe = (text: string) => terminalSafe(scrub(text));
    if (summary.error !== undefined) {
      io.stderr.write(`post-reports-etl: error: ${summary.error.code}: ${safe(summary.error.message)}\n`);
    }
    for (const f of summary.failures) {
      io.stderr.write(
        `post-reports-etl: window failed: ${f.start}..${f.end}: ${f.code}: ${safe(f.message)}\n`,
      );
    }
    // A person at a terminal reads a sentence; the JSON line below is for the scheduler.
    const tty = (io.stderr as Partial<NodeJS.WriteStream>).isTTY === true;
    if (print && tty && context.pretty && !quiet) io.stderr.write(`${closingSentence(summary, target)}\n`);
    if (printJson) printSummary(io, { ...summary, ...target }, scrub);
    await writeMetrics(io, metrics, summary, scrub);
    await sendLineage(
      io,
      lineage,
      {
        type: summary.exitCode === 0 ? 'COMPLETE' : signal.aborted ? 'ABORT' : 'FAIL',
        rows: summary.posts,
        ...(summary.error === undefined
          ? {}
          : { error: scrub(`${summary.error.code}: ${summary.error.message}`) }),
      },
      scrub,
    );
    return { exitCode: summary.exitCode, summary };
  } catch (error) {
    progress.stop();
    const cause = signal.aborted ? signal.reason : error;
    printError(io, error, scrub);
    // The exit code is the signal's when one stopped the run; the message is the error's own.
    if (printJson) printSummary(io, { ...failureSummary(command, cause, started, error), ...target }, scrub);
    const { exitCode } = classify(cause);
    await writeMetrics(io, metrics, { command, exitCode, durationMs: Date.now() - started }, scrub);
    const message = error instanceof Error ? error.message : String(error);
    await sendLineage(io, lineage, { type: signal.aborted ? 'ABORT' : 'FAIL', error: scrub(message) }, scrub);
    return { exitCode };
  }
}

/**
 * backfill or sync of every organization of an organizations file, in one run: a bar (or progress lines) for each,
 * then each one's errors and failed windows named by it, its closing sentence on a terminal, and the summary line
 * with each organization's result.
 */
async function runEveryOrganization(
  io: Io,
  command: 'backfill' | 'sync',
  context: CommandContext,
  args: RunArgs,
  progress: ProgressReporter,
  out: { readonly print: boolean; readonly printJson: boolean; readonly quiet: boolean },
): Promise<RunOutcome> {
  const { config, logger } = context;
  if (args.reset === true) {
    throw new ConfigError(
      'CONFIG_INVALID',
      `--reset starts one organization over, not every organization of ${SETTINGS.organizations.flag}: run it with ${SETTINGS.organization.flag} <id>`,
    );
  }
  // Dates checked once, before any organization starts: each would refuse them alike.
  if (command === 'backfill') backfillRange(args.from ?? '', args.to ?? '', 1, false);
  const ids = (config.organizations ?? []).map((o) => o.id);
  const where = { database: databaseWhere(config.db.url.reveal()), schema: config.db.schema };
  logger.info(
    { ...where, organizations: ids },
    `loading ${plural(ids.length, 'organization')} into schema ${where.schema} of ${where.database}`,
  );
  // Each organization is a run of its own for OpenLineage, as a run of it alone would be.
  const lineages: { readonly config: OpenLineageConfig; readonly run: LineageRun }[] = [];
  if (config.run.openLineage !== undefined) {
    const { lineageRun } = await import('./openlineage.js');
    for (const id of ids) {
      const lineage = {
        config: config.run.openLineage,
        run: lineageRun(command, config.db.schema, id, config.db.url.reveal()),
      };
      lineages.push(lineage);
      await sendLineage(io, lineage, undefined, context.scrub);
    }
  }
  const run: OrganizationRun =
    command === 'backfill'
      ? (each) =>
          backfill({ ...each, from: args.from ?? '', to: args.to ?? '', reload: args.reload ?? false })
      : (each) => sync(each);
  const summary = await runOrganizations(
    {
      config,
      logger,
      signal: context.signal,
      onProgress: progress.startOrganizations(logger, ids),
    },
    command,
    run,
  );
  progress.stop();
  const safe = (text: string) => terminalSafe(context.scrub(text));
  for (const s of summary.organizations) {
    const of = `organization ${s.organization}`;
    if (s.error !== undefined) {
      io.stderr.write(`post-reports-etl: error: ${of}: ${s.error.code}: ${safe(s.error.message)}\n`);
    }
    for (const f of s.failures) {
      io.stderr.write(
        `post-reports-etl: window failed: ${of}: ${f.start}..${f.end}: ${f.code}: ${safe(f.message)}\n`,
      );
    }
  }
  const tty = (io.stderr as Partial<NodeJS.WriteStream>).isTTY === true;
  if (out.print && tty && context.pretty && !out.quiet) {
    for (const s of summary.organizations) {
      const sentence = closingSentence(
        { ...s, command, version: summary.version },
        { ...where, organization: s.organization },
      );
      io.stderr.write(`${safe(sentence)}\n`);
    }
  }
  if (out.printJson) printSummary(io, { ...summary, ...where }, context.scrub);
  const { metricsFile } = config.run;
  if (metricsFile !== undefined) {
    try {
      await writeMetricsFileOf(
        metricsFile,
        summary.organizations.map((s) => ({
          target: { schema: config.db.schema, organization: s.organization },
          run: { ...s, command },
        })),
        new Date(),
      );
    } catch (error) {
      const reason = error instanceof Error ? error.message : String(error);
      io.stderr.write(`post-reports-etl: warning: cannot write the metrics file ${metricsFile}: ${reason}\n`);
    }
  }
  // Each organization is a group of its own on the Pushgateway, as a run of it alone would push.
  const { pushgateway } = config.run;
  if (pushgateway !== undefined) {
    const endedAt = new Date();
    for (const s of summary.organizations) {
      await pushTo(
        io,
        pushgateway,
        { schema: config.db.schema, organization: s.organization },
        { ...s, command },
        endedAt,
        context.scrub,
      );
    }
  }
  for (const s of summary.organizations) {
    await sendLineage(
      io,
      lineages.find((l) => l.run.organization === s.organization),
      {
        type: s.exitCode === 0 ? 'COMPLETE' : context.signal.aborted ? 'ABORT' : 'FAIL',
        rows: s.posts,
        ...(s.error === undefined ? {} : { error: context.scrub(`${s.error.code}: ${s.error.message}`) }),
      },
      context.scrub,
    );
  }
  return { exitCode: summary.exitCode };
}

/**
 * Sends the run's START (no `end`) or its last event when it has an OpenLineage endpoint; one the endpoint does not
 * take is a warning, not the run's failure.
 */
async function sendLineage(
  io: Io,
  lineage: { readonly config: OpenLineageConfig; readonly run: LineageRun } | undefined,
  end: LineageEnd | undefined,
  scrub: (text: string) => string,
): Promise<void> {
  if (lineage === undefined) return;
  const { sendLineageEvent } = await import('./openlineage.js');
  try {
    await sendLineageEvent(lineage.config, lineage.run, new Date(), end);
  } catch (error) {
    const reason = error instanceof Error ? error.message : String(error);
    io.stderr.write(
      `post-reports-etl: warning: cannot send the ${end?.type ?? 'START'} event to the OpenLineage endpoint ${lineage.config.url.origin}: ${terminalSafe(scrub(reason))}\n`,
    );
  }
}

/** Where a run's metrics go: a file, a Pushgateway, or both. */
interface MetricsOutputs {
  readonly path?: string;
  readonly pushgateway?: PushgatewayConfig;
  readonly target: MetricsTarget;
}

/**
 * Writes the run's metrics where asked to; a file that cannot be written, or a Pushgateway that does not take them,
 * is a warning, not the run's failure.
 */
async function writeMetrics(
  io: Io,
  metrics: MetricsOutputs | undefined,
  run: MetricsRun,
  scrub: (text: string) => string,
): Promise<void> {
  if (metrics === undefined) return;
  const endedAt = new Date();
  if (metrics.path !== undefined) {
    try {
      await writeMetricsFile(metrics.path, metrics.target, run, endedAt);
    } catch (error) {
      const reason = error instanceof Error ? error.message : String(error);
      io.stderr.write(
        `post-reports-etl: warning: cannot write the metrics file ${metrics.path}: ${reason}\n`,
      );
    }
  }
  if (metrics.pushgateway !== undefined) {
    await pushTo(io, metrics.pushgateway, metrics.target, run, endedAt, scrub);
  }
}

/** Pushes one target's metrics; a Pushgateway that does not take them is a warning, not the run's failure. */
async function pushTo(
  io: Io,
  pushgateway: PushgatewayConfig,
  target: MetricsTarget,
  run: MetricsRun,
  endedAt: Date,
  scrub: (text: string) => string,
): Promise<void> {
  const { pushMetrics } = await import('./pushgateway.js');
  try {
    await pushMetrics(pushgateway, target, run, endedAt);
  } catch (error) {
    const reason = error instanceof Error ? error.message : String(error);
    // The URL as configured holds no credentials (config.ts takes them out); the reason is scrubbed all the same.
    io.stderr.write(
      `post-reports-etl: warning: cannot push the metrics to the Pushgateway ${pushgateway.url.origin}: ${terminalSafe(scrub(reason))}\n`,
    );
  }
}
