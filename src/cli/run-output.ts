import { ConfigError, EtlError, oneLine } from '../errors.js';
import { EXIT, exitFor } from '../pipeline/exit-codes.js';
import type { RunStatus, RunSummary } from '../pipeline/run-summary.js';
import { VERSION } from '../version.js';

/** Where a command writes: stdout carries only the summary line; people read stderr. */
export interface Io {
  /** Where a question to a person is answered (a --reset on a terminal); absent: nobody to ask. */
  readonly stdin?: NodeJS.ReadableStream;
  readonly stdout: NodeJS.WritableStream;
  readonly stderr: NodeJS.WritableStream;
  /** Fired by SIGINT/SIGTERM; installed first thing, so that no early signal goes unanswered. */
  readonly signal: AbortSignal;
}

/** Maps an error that stopped a command to its exit code (exitFor decides) and status. */
export function classify(error: unknown): { exitCode: number; status: RunStatus; code: string } {
  const exitCode = exitFor({ error });
  const code = error instanceof EtlError ? error.code : 'UNEXPECTED';
  const status: RunStatus =
    exitCode === EXIT.usage
      ? 'invalid'
      : exitCode === EXIT.lockHeld
        ? 'lock_held'
        : exitCode === EXIT.interrupted
          ? 'interrupted'
          : 'failed';
  return { exitCode, status, code };
}

/** One line per problem on stderr, prefixed so that it stands out in a scheduler's log. */
export function printError(io: Io, error: unknown): void {
  const message = error instanceof Error ? error.message : String(error);
  const lines = error instanceof ConfigError ? message.split('\n') : [oneLine(message)];
  for (const line of lines) io.stderr.write(`post-reports-etl: error: ${line}\n`);
}

/**
 * The summary line of a command that `cause` stopped (its message `error`'s, when that differs): the same fields
 * in every command that prints one.
 */
export function failureSummary(
  command: string,
  cause: unknown,
  started: number,
  error: unknown = cause,
): Record<string, unknown> {
  const { exitCode, status, code } = classify(cause);
  const message = error instanceof Error ? (error.message.split('\n')[0] ?? '') : String(error);
  return {
    command,
    version: VERSION,
    status,
    exitCode,
    durationMs: Date.now() - started,
    error: { code, message },
  };
}

export function printSummary(io: Io, summary: RunSummary | Record<string, unknown>): void {
  io.stdout.write(`${JSON.stringify(summary)}\n`);
}

/**
 * A reader that stops early (`status | head -5`) closes the pipe: what is left to print has nowhere to go, and
 * that is not the command's failure. Its exit code stays the command's own.
 */
export function quietOnClosedPipe(stream: NodeJS.WritableStream): void {
  stream.on('error', (error: NodeJS.ErrnoException) => {
    if (error.code === 'EPIPE' || error.code === 'ERR_STREAM_DESTROYED') return;
    throw error;
  });
}
