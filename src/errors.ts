/**
 * Stable, machine-readable error codes. Operators and orchestrators match on these; messages may change.
 */
export type ErrorCode =
  // configuration and usage
  | 'CONFIG_INVALID'
  | 'FILTER_INVALID'
  | 'FILTERS_CHANGED'
  | 'RESET_DECLINED'
  // what the run is given to work with, checked before anything is written (preflight), or met mid-run
  | 'TOKEN_REJECTED'
  | 'DB_VERSION_UNSUPPORTED'
  | 'DB_PRIVILEGE_MISSING'
  | 'DB_LOGIN_REJECTED'
  | 'DB_NOT_FOUND'
  | 'DB_POOLER_UNSUPPORTED'
  // the API
  | 'API_HTTP_ERROR'
  | 'API_NOT_FOUND'
  | 'REPORT_REJECTED'
  | 'API_NETWORK_ERROR'
  /** The API's certificate cannot be verified (unknown CA, self-signed, expired, another name): never retried. */
  | 'API_CERTIFICATE_UNTRUSTED'
  /** The API's gateway wants a client certificate, or refuses the one shown. */
  | 'API_CLIENT_CERTIFICATE_REFUSED'
  /** The forward proxy refused the request (407, 403, another 4xx). */
  | 'PROXY_REFUSED'
  | 'API_TIMEOUT'
  | 'REPORT_FAILED'
  | 'REPORT_DEADLINE'
  | 'REPORT_GONE'
  /** The report is older than rows loaded for the same dates: it must not replace them. */
  | 'REPORT_STALE'
  // the data the API sent
  | 'PAGE_MALFORMED'
  | 'RECORD_INVALID'
  | 'FIELD_TYPE_MISMATCH'
  // the database and the run
  | 'DB_ERROR'
  | 'DB_CONNECTION_LOST'
  | 'LOCK_HELD'
  | 'SCHEMA_MISMATCH'
  | 'NO_PROGRESS'
  | 'ABORTED';

export interface EtlErrorOptions {
  cause?: unknown;
}

/** Base of every error the connector raises on purpose. `code` is stable; `message` is one line. */
export class EtlError extends Error {
  readonly code: ErrorCode;

  constructor(code: ErrorCode, message: string, options: EtlErrorOptions = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = new.target.name;
    this.code = code;
  }
}

/** Bad configuration, flags or filters: nothing was started. */
export class ConfigError extends EtlError {}

/** The API answered with an error, could not be reached, or a report could not be produced. */
export class ApiError extends EtlError {
  readonly status: number | undefined;
  readonly endpoint: string | undefined;
  readonly body: string | undefined;
  /** Asking again within the run gets the same answer (a report the API hands back until its reuse ends). */
  readonly final: boolean;

  constructor(
    code: ErrorCode,
    message: string,
    details: { status?: number; endpoint?: string; body?: string; cause?: unknown; final?: boolean } = {},
  ) {
    super(code, message, { cause: details.cause });
    this.status = details.status;
    this.endpoint = details.endpoint;
    this.body = details.body;
    this.final = details.final ?? false;
  }
}

/** The API sent data that breaks the contract (a malformed page, a record without an id, a type clash). */
export class DataError extends EtlError {}

/** The database refused, a lock is held, or the target schema does not fit this run. */
export class StoreError extends EtlError {}

/** True for errors raised because an AbortSignal fired. */
export function isAbortError(error: unknown): boolean {
  return (
    (error instanceof EtlError && error.code === 'ABORTED') ||
    (error instanceof Error && (error.name === 'AbortError' || error.name === 'TimeoutError'))
  );
}

/** One line, safe to print: newlines folded so that a server's multi-line body cannot break log lines. */
export function oneLine(text: string, max = 500): string {
  const folded = text.replace(/\s+/g, ' ').trim();
  return folded.length > max ? `${folded.slice(0, max)}…` : folded;
}
