/*
 * The connector's one error policy: what follows each error, by its code (ERROR_POLICY), and for the database's
 * own errors by their SQLSTATE (DATABASE_FAULTS): whether a request is sent again, whether a window gets another
 * attempt or fails, whether the run stops, whether a person is needed, and the exit code. The HTTP client, the
 * window attempts, the report polls, the database waits (reconnecting, claims, commits) and the CLI's exit code
 * all read it; nothing decides by an error's message. The waits between retries are here too (RETRY_WAITS).
 */
import { SETTINGS } from './config.js';
import { ApiError, type ErrorCode, EtlError, StoreError } from './errors.js';

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
 * What a window does after an attempt failed with the error: another attempt (within POST_REPORTS_WINDOW_ATTEMPTS),
 * or it fails (exit 3 unless something ends the run). 'retry unless refused': a 400, 401 or 403 is a refusal the API
 * would repeat. Whatever the rule, an error the API says it repeats for the rest of the run (`final`) fails the window.
 */
export type WindowRule = 'retry' | 'fail' | 'retry unless refused';

/**
 * What a request does after it failed with the error: sent again (with the backoff and budget of
 * RETRY_WAITS.request), never, or when its status says "later" (408, 429, 5xx).
 */
export type RequestRule = 'retry' | 'never' | 'if transient';

export interface ErrorRule {
  readonly request: RequestRule;
  readonly window: WindowRule;
  /** Every window of the run would meet it the same way: the run stops at once, its windows interrupted. */
  readonly stopsTheRun: boolean;
  /** The exit code of a run (or command) that ends on it. */
  readonly exit: ExitCode;
  /**
   * What a window attempt that ends on it makes of its report (see ReportEnd); absent: the report is kept, for the
   * next attempt to resume.
   */
  readonly report?: ReportEnd;
}

/**
 * What an attempt's error makes of its report: 'failed' or 'gone' (recorded, so that a report the API hands back is
 * recognised and never polled again), 'dropped' (the next attempt asks anew, and a report handed back is read
 * afresh from its first page).
 */
export type ReportEnd = 'failed' | 'gone' | 'dropped';

const person = (extra: Partial<ErrorRule> = {}): ErrorRule => ({
  request: 'never',
  window: 'fail',
  stopsTheRun: false,
  exit: EXIT.usage,
  ...extra,
});
const transient: ErrorRule = { request: 'retry', window: 'retry', stopsTheRun: false, exit: EXIT.failed };
const anotherAttempt: ErrorRule = {
  request: 'never',
  window: 'retry',
  stopsTheRun: false,
  exit: EXIT.failed,
};
const windowFails: ErrorRule = { request: 'never', window: 'fail', stopsTheRun: false, exit: EXIT.failed };

/** What follows each error code: the one table (a unit test checks that every code has its entry). */
export const ERROR_POLICY: { readonly [C in ErrorCode]: ErrorRule } = {
  CONFIG_INVALID: person(),
  FILTER_INVALID: person(),
  FILTERS_CHANGED: person(),
  RESET_DECLINED: person(),
  TOKEN_REJECTED: person({ stopsTheRun: true }),
  DB_VERSION_UNSUPPORTED: person(),
  DB_PRIVILEGE_MISSING: person(),
  DB_LOGIN_REJECTED: person(),
  DB_NOT_FOUND: person(),
  DB_POOLER_UNSUPPORTED: person(),
  API_NOT_FOUND: person(),
  API_HTTP_ERROR: { ...transient, request: 'if transient', window: 'retry unless refused' },
  REPORT_REJECTED: windowFails,
  API_NETWORK_ERROR: transient,
  // What the connection to the API meets on every request (its certificate, the gateway's, the proxy's refusal).
  API_CERTIFICATE_UNTRUSTED: person({ stopsTheRun: true }),
  API_CLIENT_CERTIFICATE_REFUSED: person({ stopsTheRun: true }),
  PROXY_REFUSED: person({ stopsTheRun: true }),
  API_TIMEOUT: transient,
  REPORT_FAILED: { ...anotherAttempt, report: 'failed' },
  REPORT_DEADLINE: anotherAttempt,
  // Gone for good on a 404; a page token expired (410) or refused (400) only drops it.
  REPORT_GONE: { ...anotherAttempt, report: 'gone' },
  REPORT_STALE: windowFails,
  // Maybe corrupted on the way (a proxy's error page, a cut body): read afresh, it may serve.
  PAGE_MALFORMED: { ...anotherAttempt, report: 'dropped' },
  RECORD_INVALID: anotherAttempt,
  FIELD_TYPE_MISMATCH: windowFails,
  DB_ERROR: anotherAttempt,
  DB_CONNECTION_LOST: anotherAttempt,
  LOCK_HELD: { ...anotherAttempt, exit: EXIT.lockHeld },
  SCHEMA_MISMATCH: windowFails,
  NO_PROGRESS: anotherAttempt,
  // A window's own deadline (its watchdog) aborts what it waits for too; the run's abort is told apart first.
  ABORTED: { ...anotherAttempt, exit: EXIT.interrupted },
};

/** An error that is not the connector's own (a bug, a library's): the window tries again, the run exits 1. */
const UNEXPECTED: ErrorRule = anotherAttempt;

/** The rule of an error: by its code, or UNEXPECTED. */
export function ruleOf(error: unknown): ErrorRule {
  return error instanceof EtlError ? ERROR_POLICY[error.code] : UNEXPECTED;
}

/** Statuses that say "try again later": request timeout, too many requests, and every server error. */
function isTransientStatus(status: number | undefined): boolean {
  return status !== undefined && (status === 408 || status === 429 || status >= 500);
}

/** What a window attempt that ended on `error` makes of its report, or null: it is kept. */
export function reportEnd(error: unknown): ReportEnd | null {
  const end = ruleOf(error).report;
  if (end === undefined) return null;
  return end === 'gone' && !(error instanceof ApiError && error.status === 404) ? 'dropped' : end;
}

/** The code of an HTTP error status: 401 (the token is not valid) and 403 (not allowed) reject the token. */
export function httpErrorCode(status: number): 'TOKEN_REJECTED' | 'API_HTTP_ERROR' {
  return status === 401 || status === 403 ? 'TOKEN_REJECTED' : 'API_HTTP_ERROR';
}

/** pg's own words (no SQLSTATE) when the server asks for a password (SCRAM, md5) and the connection gives none. */
const PASSWORD_NOT_GIVEN =
  /client password must be a string|password must be a string|no password (was )?(supplied|given)/i;

/**
 * A refusal of a connection that needs a person (DB_LOGIN_REJECTED, DB_NOT_FOUND): PostgreSQL's class 28 (the role
 * or its password) and 3D000 (no such database), or pg's before it asks (a password the server wants, not given).
 */
export type ConnectionRefusal = 'login rejected' | 'password not given' | 'no such database';

export function connectionRefusal(error: unknown): ConnectionRefusal | undefined {
  const state = sqlState(error);
  if (state?.startsWith('28') === true) return 'login rejected';
  if (state === '3D000') return 'no such database';
  return state === undefined && error instanceof Error && PASSWORD_NOT_GIVEN.test(error.message)
    ? 'password not given'
    : undefined;
}

/** Whether a failed request is sent again (network errors, timeouts, 408, 429, 5xx; never an abort). */
export function retriesRequest(error: unknown): boolean {
  if (!(error instanceof ApiError)) return false;
  const rule = ERROR_POLICY[error.code].request;
  return rule === 'retry' || (rule === 'if transient' && isTransientStatus(error.status));
}

/** Statuses the API would answer a window's next attempt with again. */
const REFUSALS = new Set([400, 401, 403]);

/** Whether a window whose attempt failed with the error gets another attempt (within its budget). */
export function retriesWindow(error: unknown): boolean {
  if (error instanceof ApiError && error.final) return false;
  const rule = ruleOf(error).window;
  if (rule === 'retry unless refused') return !(error instanceof ApiError && REFUSALS.has(error.status ?? 0));
  return rule === 'retry';
}

/** Errors every window of the run would meet the same way (a token the API rejects): the run stops at once. */
export function stopsTheRun(error: unknown): error is EtlError {
  return error instanceof EtlError && ERROR_POLICY[error.code].stopsTheRun;
}

/** Whether retrying cannot help: a person must fix something first (exit 2). */
export function needsAPerson(error: unknown): boolean {
  return ruleOf(error).exit === EXIT.usage;
}

/** The exit code of a run or command that ends on `error`. */
export function exitForError(error: unknown): ExitCode {
  return ruleOf(error).exit;
}

/**
 * The database's own transient faults, each retried by the database retry (src/load/database-retry.ts) within
 * POST_REPORTS_RECONNECT_WAIT_MS: a session lost (a terminated or crashed backend, a restart, a failover, a network
 * cut; the run's lock or claims lost with it), a transaction PostgreSQL rolled back for a serialization failure or
 * a deadlock (which its documentation asks every client to retry), a lock waited for past lock_timeout.
 */
export type DatabaseFault = 'connection lost' | 'conflict' | 'lock timeout';

/** Class 08 (connection exception), 57P01-57P03 (terminated, crashed, not yet accepting), 57P05 (idle cut). */
const LOST_STATES = /^(08...|57P0[1235])$/;
/** The SQLSTATE of a pg error, if the value is one. */
export function sqlState(error: unknown): string | undefined {
  if (error !== null && typeof error === 'object' && 'code' in error && typeof error.code === 'string') {
    return error.code;
  }
  return undefined;
}

/** The SQLSTATEs of the faults other than a lost session. */
export const DATABASE_FAULTS: Readonly<Record<string, DatabaseFault>> = {
  '40001': 'conflict', // serialization_failure
  '40P01': 'conflict', // deadlock_detected
  '55P03': 'lock timeout', // lock_not_available
};
/** Node's socket errors (their `code`) that mean the server is out of reach or the connection gone. */
const LOST_SOCKET_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'EPIPE',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'ENOTFOUND',
  'EAI_AGAIN',
]);
/**
 * pg raises a few errors with no code at all (a connection ended under a query, a pool that could not connect
 * in time, a client whose connection already failed), and PostgreSQL refuses a connection to a database closed
 * for a moment (ALLOW_CONNECTIONS false while it is switched over) with the code of any missing object: for
 * these alone, the text is all there is to go by.
 */
const LOST_WITHOUT_CODE =
  /^Connection terminated|^connection timeout|timeout exceeded when trying to connect|not queryable|socket hang up/i;
const CLOSED_DATABASE = /is not currently accepting connections/;

/** The database fault an error (or one it wraps) is, if any. */
export function databaseFault(error: unknown): DatabaseFault | undefined {
  for (let e: unknown = error, depth = 0; e instanceof Error && depth < 5; e = e.cause, depth++) {
    if (e instanceof StoreError && e.code === 'DB_CONNECTION_LOST') return 'connection lost';
    const code = 'code' in e && typeof e.code === 'string' ? e.code : undefined;
    if (code !== undefined) {
      if (LOST_STATES.test(code) || LOST_SOCKET_CODES.has(code)) return 'connection lost';
      const fault = DATABASE_FAULTS[code];
      if (fault !== undefined) return fault;
      if (CLOSED_DATABASE.test(e.message)) return 'connection lost';
    } else if (LOST_WITHOUT_CODE.test(e.message)) {
      return 'connection lost';
    }
  }
  return undefined;
}

/**
 * PostgreSQL's answers that are not faults (the same statement would meet them again) but facts the loader acts
 * on, each where it is met (https://www.postgresql.org/docs/current/errcodes-appendix.html):
 * - `no such table`, `no such column`: a schema not made yet, or made by an older version: read as empty;
 * - `duplicate key`: a post id the report repeats: the stage loses its key, the commit keeps the last occurrence;
 * - `duplicate column`: a column added outside the schema lock meanwhile: the columns are read and chosen again;
 * - `overlapping partition`: another period's partition holds some of the dates (the setting changed): the rows
 *   go there;
 * - `no partition for the row`: dates between partitions of another period: the window fails, naming the setting.
 */
export const DATABASE_ANSWERS = {
  'no such table': '42P01', // undefined_table
  'no such column': '42703', // undefined_column
  'duplicate key': '23505', // unique_violation
  'duplicate column': '42701', // duplicate_column
  'overlapping partition': '42P17', // invalid_object_definition
  'no partition for the row': '23514', // check_violation
} as const;
export type DatabaseAnswer = keyof typeof DATABASE_ANSWERS;

/** Whether PostgreSQL refused the statement with one of `answers`. */
export function answeredWith(error: unknown, ...answers: readonly DatabaseAnswer[]): boolean {
  const state = sqlState(error);
  return state !== undefined && answers.some((answer) => DATABASE_ANSWERS[answer] === state);
}

/**
 * Whether PostgreSQL refused what a statement wrote or the shape it wrote into (classes 22: data exception, 23:
 * integrity constraint, 42: syntax error or access rule violation), as opposed to the way it was written (a lost
 * connection, a timeout, a cancel): a page's fast write then takes the careful way, which tells the causes apart.
 */
export function refusedWhatWasWritten(error: unknown): boolean {
  return /^(22|23|42)/.test(sqlState(error) ?? '');
}

/**
 * Whether PostgreSQL refused a definition (class 42): a partition the parent's partitioning, collation or
 * constraints do not allow.
 */
export function refusedDefinition(error: unknown): boolean {
  return sqlState(error)?.startsWith('42') === true;
}

/**
 * The deadline of the connector's own (each a setting) that ended a statement or a connection, if one did. A lock
 * timeout and a statement timeout share their SQLSTATE with a lock refused at once (NOWAIT) and a cancel: only
 * PostgreSQL's words tell them apart; pg's connect timeout has no code at all.
 */
export type DatabaseDeadline = 'lock' | 'statement' | 'idle in transaction' | 'connect';

export function databaseDeadline(error: unknown): DatabaseDeadline | undefined {
  const state = sqlState(error);
  const reason = error instanceof Error ? error.message : String(error);
  if (state === '55P03' && /lock timeout/i.test(reason)) return 'lock'; // lock_not_available
  if (state === '57014' && /statement timeout/i.test(reason)) return 'statement'; // query_canceled
  if (state === '25P03') return 'idle in transaction'; // idle_in_transaction_session_timeout
  if (state === undefined && /timeout exceeded when trying to connect|connection timeout/i.test(reason)) {
    return 'connect';
  }
  return undefined;
}

/**
 * Whether PostgreSQL itself answered with the error (a SQLSTATE: classes 00-58, F0, HV, P0, XX), as opposed to the
 * network or pg (Node's codes, such as EPIPE, have the same length).
 */
export function answeredByServer(error: unknown): boolean {
  return /^(?:[0-5][0-9A-Z]|F0|HV|P0|XX)[0-9A-Z]{3}$/.test(sqlState(error) ?? '');
}

/** Whether the database went away (see DatabaseFault): retrying once it is back can succeed. */
export function isConnectionLoss(error: unknown): boolean {
  return databaseFault(error) === 'connection lost';
}

/** The waits between retries: the first (`firstMs`, or the setting `first`) doubled at each retry up to `maxMs` (backoffMs), and the settings that bound them. */
export const RETRY_WAITS = {
  /** A request: from POST_REPORTS_RETRY_MIN_DELAY_MS (or the server's Retry-After). */
  request: {
    first: SETTINGS.retryMinDelayMs.env,
    maxMs: 60_000,
    budget: `${SETTINGS.maxAttempts.env}, ${SETTINGS.maxRetryTimeMs.env}`,
  },
  /** A window's next attempt. */
  window: { firstMs: 1000, maxMs: 30_000, budget: SETTINGS.windowAttempts.env },
  /** A database fault: reconnecting, a claim, a commit, a conflict or a lock timeout. */
  database: { firstMs: 250, maxMs: 5000, budget: SETTINGS.reconnectWaitMs.env },
  /** Windows another process holds: asked again at this pace until it lets go (or the run is stopped). */
  busy: { everyMs: 250 },
} as const;

/**
 * The wait before retry `attempt` (1: the first): `firstMs` doubled at each retry up to `maxMs`, with full
 * jitter between half and the whole, which keeps parallel windows from retrying in lockstep.
 */
export function backoffMs(attempt: number, firstMs: number, maxMs: number): number {
  const base = Math.min(maxMs, firstMs * 2 ** (attempt - 1));
  return Math.round(base * (0.5 + Math.random() / 2));
}

/** The codes whose rule ends a run with `exit`, as the README's table names them. */
function codesExiting(exit: ExitCode): string {
  return (Object.keys(ERROR_POLICY) as ErrorCode[])
    .filter((code) => ERROR_POLICY[code].exit === exit)
    .map((code) => `\`${code}\``)
    .join(', ');
}

/**
 * What each exit code means, in the order the README's table lists them (a unit test keeps the two equal); the
 * codes that need a person are read from ERROR_POLICY.
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
    meaning: `needs a person: a bad flag, date, filter or field name, a missing token, a filter or field selection change without \`--reset\`, PostgreSQL older than 14, a missing privilege, a login PostgreSQL refuses, a database that does not exist, a base URL the API answers 404 at, an API certificate that cannot be verified or a client certificate its gateway wants, a proxy that refuses (407, 403), a pooler in transaction mode (each found before anything is written), a \`--reset\` declined at its question; a token the API rejects (401/403), on any request, stops the run at once (${codesExiting(EXIT.usage)})`,
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
