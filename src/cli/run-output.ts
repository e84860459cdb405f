import { ConfigError, oneLine } from '../errors.js';
import { errorEnd } from '../pipeline/exit-codes.js';
import type { RunStatus, RunSummary } from '../pipeline/run-summary.js';
import { terminalSafe } from '../secret.js';
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
  return errorEnd(error);
}

/** One line per problem on stderr, prefixed so that it stands out in a scheduler's log. */
export function printError(io: Io, error: unknown, scrub: (text: string) => string = (text) => text): void {
  const message = error instanceof Error ? error.message : String(error);
  const lines = error instanceof ConfigError ? message.split('\n') : [oneLine(message)];
  // An error may quote the API (a status, an id, a message): its control characters show, and do nothing.
  for (const line of lines) io.stderr.write(`post-reports-etl: error: ${terminalSafe(scrub(line))}\n`);
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

/** `1 window`, `5 windows`. */
export function plural(count: number, noun: string): string {
  return `${count} ${noun}${count === 1 ? '' : 's'}`;
}

/** Where a run writes: the database (host:port/database, no user or password), the schema and the organization. */
export interface RunTarget {
  readonly database: string;
  readonly schema: string;
  readonly organization: string;
}

/** The target as a sentence names it: `schema s (organization o) of host:port/database`. */
export function describeTarget(target: RunTarget): string {
  return `schema ${target.schema} (organization ${target.organization}) of ${target.database}`;
}

/** The end of a run in a sentence a person reads: what was loaded where, and what to do about what was not. */
export function closingSentence(summary: RunSummary, target?: RunTarget): string {
  const { windows } = summary;
  const range = summary.from === null ? '' : `, ${summary.from} to ${summary.to}`;
  const into = target === undefined ? '' : ` into ${describeTarget(target)}`;
  const parts = [
    `Loaded ${plural(summary.posts, 'post')} in ${plural(windows.loaded, 'window')}${range}${into}, in ${(summary.durationMs / 1000).toFixed(1)} s.`,
  ];
  if (windows.skipped > 0) parts.push(`${plural(windows.skipped, 'window')} already loaded, skipped.`);
  if (windows.byOthers > 0) parts.push(`${plural(windows.byOthers, 'window')} loaded by another run.`);
  if (windows.failed > 0) {
    parts.push(
      `${plural(windows.failed, 'window')} failed (above): run the same command again to load them.`,
    );
  }
  if (summary.status === 'interrupted') parts.push('Interrupted: run the same command again to resume.');
  if (summary.error !== undefined) parts.push(`Stopped: ${summary.error.message}`);
  if (summary.command === 'sync' && summary.cursor !== null) parts.push(`Cursor: ${summary.cursor}.`);
  return parts.join(' ');
}

export function printSummary(
  io: Io,
  summary: RunSummary | Record<string, unknown>,
  scrub: (text: string) => string = (text) => text,
): void {
  // JSON escapes C0 controls; the C1 ones and bidirectional overrides are escaped too, the JSON still the same.
  io.stdout.write(`${terminalSafe(scrub(JSON.stringify(summary)))}\n`);
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
