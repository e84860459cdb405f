import { ApiError } from '../errors.js';

/** Statuses that say "try again later": request timeout, too many requests, and every server error. */
function isTransientStatus(status: number): boolean {
  return status === 408 || status === 429 || status >= 500;
}

/**
 * Whether a failed request may be sent again: network errors, timeouts, 408, 429 and 5xx. Everything else
 * (400, 401, 403, 404, 410, a redirect, an abort, invalid JSON) would fail the same way again.
 */
export function isRetryable(error: unknown): boolean {
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
