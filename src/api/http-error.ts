import { ApiError, type ErrorCode } from '../errors.js';

/**
 * An HTTP error status from the API, with the wait its Retry-After header asked for (if any). A 401 or 403 is
 * TOKEN_REJECTED: every request of the run would get the same answer.
 */
export class HttpError extends ApiError {
  readonly retryAfterMs: number | undefined;

  constructor(
    message: string,
    details: { status: number; endpoint: string; body: string; retryAfterMs?: number | undefined },
  ) {
    const code: ErrorCode = isTokenRejection(details.status) ? 'TOKEN_REJECTED' : 'API_HTTP_ERROR';
    super(code, message, {
      status: details.status,
      endpoint: details.endpoint,
      body: details.body,
    });
    this.retryAfterMs = details.retryAfterMs;
  }
}

/** 401 (the token is not valid) and 403 (it is not allowed): no request of the run can succeed with it. */
export function isTokenRejection(status: number | undefined): boolean {
  return status === 401 || status === 403;
}
