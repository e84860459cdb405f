import type { CliResult } from '../helpers/cli.js';

/** An exit code, or the signal that ended the process. */
export function exitLabel(code: number | null, signal: string | null): string {
  return code === null ? String(signal) : String(code);
}

/** Why a run failed, for a report: its summary's error, else its last error line, else its last line. */
export function lastError(result: CliResult): string {
  const error = result.summary?.error as { code?: unknown; message?: unknown } | undefined;
  if (typeof error?.message === 'string') return `${String(error.code)}: ${error.message}`.slice(0, 400);
  const lines = result.stderr.split('\n').filter((l) => l.trim() !== '');
  return (lines.filter((l) => l.includes('error')).at(-1) ?? lines.at(-1) ?? '').slice(0, 400);
}

/** Exit codes a faulty run may end with, given what struck it. */
export function allowedExits(signalled: string | null, backendsKilled: number): Set<number> {
  const allowed = new Set([0, 3]);
  if (signalled === 'SIGTERM') allowed.add(130);
  if (backendsKilled > 0) allowed.add(1);
  return allowed;
}

/** What the connector logs when it finds a bug of its own (database.ts closePool): never expected of a run. */
const OWN_BUG = '(a bug in the connector)';

/**
 * Every run prints its summary line, whatever ends it; only a signal that kills the process may keep it from it.
 * No run logs a bug of its own.
 */
export function summaryProblem(result: CliResult, who: string): string[] {
  const bugs = result.stderr
    .split('\n')
    .filter((line) => line.includes(OWN_BUG))
    .map((line) => `${who} logged a bug of its own: ${line.slice(0, 400)}`);
  if (result.summary !== undefined || result.signal !== null) return bugs;
  return [
    ...bugs,
    `${who} exited ${exitLabel(result.code, result.signal)} without its summary line: ${lastError(result)}`,
  ];
}
