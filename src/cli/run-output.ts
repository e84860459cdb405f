import { ConfigError, EtlError, oneLine, StoreError } from '../errors.js';
import { EXIT, type RunStatus, type RunSummary } from '../pipeline/run-summary.js';

/** Where a command writes: stdout carries only the summary line; people read stderr. */
export interface Io {
  readonly stdout: NodeJS.WritableStream;
  readonly stderr: NodeJS.WritableStream;
  /** Fired by SIGINT/SIGTERM; installed first thing, so that no early signal goes unanswered. */
  readonly signal: AbortSignal;
}

/** Maps an error that stopped a command to its exit code and status. */
export function classify(error: unknown): { exitCode: number; status: RunStatus; code: string } {
  if (error instanceof ConfigError) return { exitCode: EXIT.usage, status: 'invalid', code: error.code };
  if (error instanceof StoreError && error.code === 'LOCK_HELD') {
    return { exitCode: EXIT.lockHeld, status: 'lock_held', code: error.code };
  }
  if (error instanceof EtlError && error.code === 'ABORTED') {
    return { exitCode: EXIT.interrupted, status: 'interrupted', code: error.code };
  }
  if (error instanceof EtlError) return { exitCode: EXIT.failed, status: 'failed', code: error.code };
  return { exitCode: EXIT.failed, status: 'failed', code: 'UNEXPECTED' };
}

/** One line per problem on stderr, prefixed so that it stands out in a scheduler's log. */
export function printError(io: Io, error: unknown): void {
  const message = error instanceof Error ? error.message : String(error);
  const lines = error instanceof ConfigError ? message.split('\n') : [oneLine(message)];
  for (const line of lines) io.stderr.write(`post-reports-etl: error: ${line}\n`);
}

export function printSummary(io: Io, summary: RunSummary | Record<string, unknown>): void {
  io.stdout.write(`${JSON.stringify(summary)}\n`);
}
