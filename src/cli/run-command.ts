import type { Flags } from '../config.js';
import { backfill } from '../pipeline/backfill.js';
import type { RunSummary } from '../pipeline/run-summary.js';
import { sync } from '../pipeline/sync.js';
import { commandContext, interruptSignal } from './context.js';
import { classify, type Io, printError, printSummary } from './run-output.js';

export interface RunArgs {
  readonly from?: string;
  readonly to?: string;
  readonly reload?: boolean;
  readonly reset?: boolean;
}

/** Runs backfill or sync, prints the summary line on stdout, and returns the exit code. */
export async function runCommand(
  io: Io,
  command: 'backfill' | 'sync',
  flags: Flags,
  args: RunArgs,
): Promise<number> {
  const started = Date.now();
  const signal = interruptSignal();
  let summary: RunSummary | undefined;
  try {
    const context = commandContext(flags, { api: true, db: true }, signal);
    const failed = (s: RunSummary) => s.failures.map((f) => `${f.start}..${f.end}: ${f.code}: ${f.message}`);
    summary =
      command === 'backfill'
        ? await backfill({
            ...context,
            from: args.from ?? '',
            to: args.to ?? '',
            reload: args.reload ?? false,
            reset: args.reset ?? false,
          })
        : await sync({ ...context, reset: args.reset ?? false });
    for (const line of failed(summary)) io.stderr.write(`post-reports-etl: window failed: ${line}\n`);
    printSummary(io, summary);
    return summary.exitCode;
  } catch (error) {
    const { exitCode, status, code } = signal.aborted ? classify(signal.reason) : classify(error);
    printError(io, error);
    printSummary(io, {
      command,
      status,
      exitCode,
      durationMs: Date.now() - started,
      error: { code, message: error instanceof Error ? error.message.split('\n')[0] : String(error) },
    });
    return exitCode;
  }
}
