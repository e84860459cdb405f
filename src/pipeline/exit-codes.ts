import { EXIT, type ExitCode, exitForError } from '../error-policy.js';

export { EXIT, EXIT_CODE_TABLE, type ExitCode } from '../error-policy.js';

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
