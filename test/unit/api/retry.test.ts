import { describe, expect, it } from 'vitest';
import { HttpError } from '../../../src/api/http-error.js';
import { retryAfterMs } from '../../../src/api/retry-after.js';
import { isRetryable } from '../../../src/api/retry-policy.js';
import { ApiError, DataError } from '../../../src/errors.js';

function http(status: number): HttpError {
  return new HttpError(`GET /x answered ${status}`, { status, endpoint: 'GET /x', body: '' });
}

describe('isRetryable', () => {
  it.each([408, 429, 500, 502, 503, 504])('retries %i', (status) => {
    expect(isRetryable(http(status))).toBe(true);
  });
  it.each([301, 400, 401, 403, 404, 409, 410, 422])('never retries %i', (status) => {
    expect(isRetryable(http(status))).toBe(false);
  });
  it('retries network errors and timeouts, not aborts or bad data', () => {
    expect(isRetryable(new ApiError('API_NETWORK_ERROR', 'x'))).toBe(true);
    expect(isRetryable(new ApiError('API_TIMEOUT', 'x'))).toBe(true);
    expect(isRetryable(new ApiError('ABORTED', 'x'))).toBe(false);
    expect(isRetryable(new DataError('PAGE_MALFORMED', 'x'))).toBe(false);
    expect(isRetryable(new Error('x'))).toBe(false);
  });
});

describe('retryAfterMs', () => {
  const now = Date.parse('2026-03-04T10:00:00Z');
  it('reads delta-seconds and HTTP dates', () => {
    expect(retryAfterMs('0', now)).toBe(0);
    expect(retryAfterMs(' 7 ', now)).toBe(7000);
    expect(retryAfterMs('Wed, 04 Mar 2026 10:00:30 GMT', now)).toBe(30_000);
    expect(retryAfterMs('Wed, 04 Mar 2026 09:00:00 GMT', now)).toBe(0);
  });
  it('ignores what it cannot read and caps absurd waits', () => {
    expect(retryAfterMs(null, now)).toBeUndefined();
    expect(retryAfterMs('', now)).toBeUndefined();
    expect(retryAfterMs('soon', now)).toBeUndefined();
    expect(retryAfterMs('-5', now)).toBeUndefined();
    expect(retryAfterMs('999999999', now)).toBe(3_600_000);
  });
});
