import { EXIT, type ExitCode, exitForError } from '../error-policy.js';
import { EtlError } from '../errors.js';

export { EXIT, EXIT_CODE_TABLE, type ExitCode } from '../error-policy.js';

/** How a run ended, in its summary: the word for its exit code. */
export type RunStatus = 'succeeded' | 'partial' | 'failed' | 'interrupted' | 'lock_held' | 'invalid';

/** How a run ended, as far as its exit code goes. */
export type RunEnd =
  /** The run could not start, or stopped as a whole, on this error. */
  | { readonly error: unknown }
  /** The run went through its windows. */
  | {
      readonly interrupted: boolean;
      readonly failedWindows: number;
      /** What stopped the run before its windows were done (a rejected token), if anything. */
      readonly stoppedBy?: unknown;
    };

/**
 * The exit code of every command, by cause: the one function the CLI (runs, `status`, `plan`, `migrate`,
 * `dimensions`, the demo) and the summary use; an error's code is read from the error policy (ERROR_POLICY).
 */
export function exitFor(end: RunEnd): ExitCode {
  if ('error' in end) return exitForError(end.error);
  if (end.stoppedBy !== undefined) return exitForError(end.stoppedBy);
  if (end.interrupted) return EXIT.interrupted;
  return end.failedWindows > 0 ? EXIT.partial : EXIT.ok;
}

/**
 * The exit codes from the most serious down, for a run of several organizations, which exits with the most serious
 * of theirs: a stop (SIGINT/SIGTERM) ends them all; then what needs a person, whom a run again would not spare;
 * then a failure as a whole, which the next run may get past; a lock another process held; windows failed; success.
 */
export const EXIT_SEVERITY: readonly ExitCode[] = [
  EXIT.interrupted,
  EXIT.usage,
  EXIT.failed,
  EXIT.lockHeld,
  EXIT.partial,
  EXIT.ok,
];

/** The most serious of these exit codes (EXIT_SEVERITY); success for none. */
export function mostSerious(codes: Iterable<ExitCode>): ExitCode {
  let worst: ExitCode = EXIT.ok;
  for (const code of codes) {
    if (EXIT_SEVERITY.indexOf(code) < EXIT_SEVERITY.indexOf(worst)) worst = code;
  }
  return worst;
}

/** How a command (or one organization's run) that `error` stopped ends: its exit code, status and error code. */
export function errorEnd(error: unknown): { exitCode: ExitCode; status: RunStatus; code: string } {
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
