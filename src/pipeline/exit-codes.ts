import { ConfigError, EtlError, StoreError } from '../errors.js';

/** Exit codes of the CLI; orchestrators act on these. */
export const EXIT = {
  ok: 0,
  failed: 1,
  usage: 2,
  partial: 3,
  lockHeld: 4,
  interrupted: 130,
} as const;

export type ExitCode = (typeof EXIT)[keyof typeof EXIT];

/**
 * What each exit code means, in the order the README's table lists them (a unit test keeps the two equal).
 * exitFor below is the only place that decides a code.
 */
export const EXIT_CODE_TABLE: readonly { readonly code: ExitCode; readonly meaning: string }[] = [
  { code: EXIT.ok, meaning: 'success' },
  {
    code: EXIT.failed,
    meaning:
      'the run failed as a whole: the API or the database unreachable (after the retries), the database gone mid-run for longer than `POST_REPORTS_RECONNECT_WAIT_MS` or reset meanwhile (`DB_CONNECTION_LOST`: what was committed stays, the next run resumes), an unexpected error',
  },
  {
    code: EXIT.usage,
    meaning:
      'needs a person: a bad flag, date, filter or field name, a missing token, a filter or field selection change without `--reset`, PostgreSQL older than 14, a missing privilege, a login PostgreSQL refuses, a database that does not exist, a base URL the API answers 404 at, an API certificate that cannot be verified or a client certificate its gateway wants, a proxy that refuses (407, 403), a pooler in transaction mode (each found before anything is written), a `--reset` declined at its question; a token the API rejects (401/403), on any request, stops the run at once',
  },
  {
    code: EXIT.partial,
    meaning:
      "partial failure: some windows failed (named in the summary and on stderr; a 400 on report creation fails its window with the API's message); the others are loaded",
  },
  {
    code: EXIT.lockHeld,
    meaning:
      'a `--reset` (a rename) or a migration (`migrate`, or a run of a newer version) waited `POST_REPORTS_LOCK_WAIT_MS` for the runs of the organization (of the schema) to end, or a run waited that long for one of them: runs themselves share a schema',
  },
  {
    code: EXIT.interrupted,
    meaning: 'interrupted by SIGINT or SIGTERM: the window in progress was rolled back, the lock released',
  },
];

/** Error codes that need a person whatever happens next: retrying cannot help. */
const NEEDS_A_PERSON = new Set<string>([
  'CONFIG_INVALID',
  'FILTER_INVALID',
  'FILTERS_CHANGED',
  'RESET_DECLINED',
  'TOKEN_REJECTED',
  'DB_VERSION_UNSUPPORTED',
  'DB_PRIVILEGE_MISSING',
  'DB_LOGIN_REJECTED',
  'DB_NOT_FOUND',
  'API_NOT_FOUND',
  'DB_POOLER_UNSUPPORTED',
  'API_CERTIFICATE_UNTRUSTED',
  'API_CLIENT_CERTIFICATE_REFUSED',
  'PROXY_REFUSED',
]);

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
 * `dimensions`, the demo), the summary and the README's table agree with.
 */
export function exitFor(end: RunEnd): ExitCode {
  if ('error' in end) return exitForError(end.error);
  if (end.stoppedBy !== undefined) return exitForError(end.stoppedBy);
  if (end.interrupted) return EXIT.interrupted;
  return end.failedWindows > 0 ? EXIT.partial : EXIT.ok;
}

function exitForError(error: unknown): ExitCode {
  if (error instanceof EtlError && NEEDS_A_PERSON.has(error.code)) return EXIT.usage;
  if (error instanceof ConfigError) return EXIT.usage;
  if (error instanceof StoreError && error.code === 'LOCK_HELD') return EXIT.lockHeld;
  if (error instanceof EtlError && error.code === 'ABORTED') return EXIT.interrupted;
  return EXIT.failed;
}
