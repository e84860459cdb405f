/*
 * The connector's one retry policy: what may be tried again (isRetryable, for a request and for a window
 * attempt), and how long to wait first: exponential backoff with jitter for requests and window attempts
 * (backoffMs), a share of the time waited for report polls (pollDelayMs).
 */
import { ApiError, ConfigError, EtlError, StoreError } from '../errors.js';

/** Statuses that say "try again later": request timeout, too many requests, and every server error. */
function isTransientStatus(status: number): boolean {
  return status === 408 || status === 429 || status >= 500;
}

/**
 * Whether what failed may be tried again.
 *
 * A request ('request'): network errors, timeouts, 408, 429 and 5xx. Everything else (400, 401, 403, 404, 410, a
 * redirect, an abort, invalid JSON) would fail the same way again.
 *
 * A window attempt ('window'), after its requests' own retries: anything but what a new attempt would meet
 * again: bad configuration, a schema that does not fit, a value its column cannot take, the API refusing the
 * request or the token (400, 401, 403), and a report the API hands back until its reuse period ends (`final`).
 */
export function isRetryable(error: unknown, scope: 'request' | 'window' = 'request'): boolean {
  if (scope === 'window') {
    if (error instanceof ConfigError) return false;
    if (error instanceof StoreError && error.code === 'SCHEMA_MISMATCH') return false;
    if (error instanceof EtlError && error.code === 'FIELD_TYPE_MISMATCH') return false;
    // A report gone (a 400 on one of its pages included) is retried with a new report; any other 400 is a refusal.
    if (error instanceof ApiError && error.code === 'REPORT_GONE' && !error.final) return true;
    if (error instanceof ApiError && (error.final || [400, 401, 403].includes(error.status ?? 0)))
      return false;
    return true;
  }
  if (!(error instanceof ApiError)) return false;
  switch (error.code) {
    case 'API_NETWORK_ERROR':
    case 'API_TIMEOUT':
      return true;
    case 'API_HTTP_ERROR':
      return error.status !== undefined && isTransientStatus(error.status);
    default:
      return false;
  }
}

/**
 * The wait before retry `attempt` (1: the first): `firstMs` doubled at each retry up to `maxMs`, with full
 * jitter between half and the whole, which keeps parallel windows from retrying in lockstep.
 */
export function backoffMs(attempt: number, firstMs: number, maxMs: number): number {
  const base = Math.min(maxMs, firstMs * 2 ** (attempt - 1));
  return Math.round(base * (0.5 + Math.random() / 2));
}

/**
 * Each poll waits this share of the time waited so far (within the poll bounds): a report is then noticed at
 * most about 10 % after it got DONE, whatever its generation time, with a number of polls that grows only with
 * the logarithm of that time.
 */
const POLL_SHARE = 0.1;

/** An aimed poll never follows the one before it closer than this: two polls a moment apart tell nothing more. */
const AIM_MIN_GAP_MS = 20;

/**
 * The wait before the next poll of a report, `elapsedMs` after the first; jitter spreads parallel windows. With
 * `aimInMs` (when the report is likely DONE, from now: see ReportReadiness), a wait that would pass that moment
 * ends at it instead, so that a report as quick as the run's recent ones is noticed when it gets DONE; once the
 * moment is past, polls follow the share of the time waited again.
 */
export function pollDelayMs(
  elapsedMs: number,
  poll: { readonly initialMs: number; readonly maxMs: number },
  aimInMs?: number,
): number {
  const interval = Math.min(poll.maxMs, Math.max(poll.initialMs, elapsedMs * POLL_SHARE));
  const wait = Math.round(interval * (0.8 + Math.random() * 0.4));
  if (aimInMs === undefined || aimInMs <= 0) return wait;
  return Math.min(wait, Math.max(AIM_MIN_GAP_MS, Math.round(aimInMs)));
}
