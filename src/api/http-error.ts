import { ApiError } from '../errors.js';

/** An HTTP error status from the API, with the wait its Retry-After header asked for (if any). */
export class HttpError extends ApiError {
  readonly retryAfterMs: number | undefined;

  constructor(
    message: string,
    details: { status: number; endpoint: string; body: string; retryAfterMs?: number | undefined },
  ) {
    super('API_HTTP_ERROR', message, {
      status: details.status,
      endpoint: details.endpoint,
      body: details.body,
    });
    this.retryAfterMs = details.retryAfterMs;
  }
}
