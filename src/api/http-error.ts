import { httpErrorCode } from '../error-policy.js';
import { ApiError } from '../errors.js';

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
    super(httpErrorCode(details.status), message, {
      status: details.status,
      endpoint: details.endpoint,
      body: details.body,
    });
    this.retryAfterMs = details.retryAfterMs;
  }
}
