import { describe, expect, it } from 'vitest';
import { HttpError } from '../../../src/api/http-error.js';
import { retryAfterMs } from '../../../src/api/retry-after.js';
import { pollDelayMs } from '../../../src/api/retry-policy.js';
import { backoffMs, retriesRequest, retriesWindow } from '../../../src/error-policy.js';
import { ApiError, ConfigError, DataError, StoreError } from '../../../src/errors.js';

function http(status: number): HttpError {
  return new HttpError(`GET /x answered ${status}`, { status, endpoint: 'GET /x', body: '' });
}

describe('retriesRequest', () => {
  it.each([408, 429, 500, 502, 503, 504])('retries %i', (status) => {
    expect(retriesRequest(http(status))).toBe(true);
  });
  it.each([301, 400, 401, 403, 404, 409, 410, 422])('never retries %i', (status) => {
    expect(retriesRequest(http(status))).toBe(false);
  });
  it('retries network errors and timeouts, not aborts or bad data', () => {
    expect(retriesRequest(new ApiError('API_NETWORK_ERROR', 'x'))).toBe(true);
    expect(retriesRequest(new ApiError('API_TIMEOUT', 'x'))).toBe(true);
    expect(retriesRequest(new ApiError('ABORTED', 'x'))).toBe(false);
    expect(retriesRequest(new DataError('PAGE_MALFORMED', 'x'))).toBe(false);
    expect(retriesRequest(new Error('x'))).toBe(false);
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

describe('retriesWindow', () => {
  it('retries what a new attempt may not meet again', () => {
    expect(retriesWindow(new ApiError('REPORT_FAILED', 'x'))).toBe(true);
    expect(retriesWindow(new ApiError('REPORT_GONE', 'x', { status: 404 }))).toBe(true);
    expect(retriesWindow(new DataError('PAGE_MALFORMED', 'x'))).toBe(true);
    expect(retriesWindow(new StoreError('DB_ERROR', 'x'))).toBe(true);
  });

  it('does not retry what it would meet again', () => {
    expect(retriesWindow(new ApiError('REPORT_FAILED', 'handed back', { final: true }))).toBe(false);
    expect(retriesWindow(new ApiError('REPORT_STALE', 'handed back', { final: true }))).toBe(false);
    expect(retriesWindow(new ApiError('REPORT_REJECTED', 'x', { status: 400 }))).toBe(false);
    expect(retriesWindow(new ApiError('API_HTTP_ERROR', 'x', { status: 403 }))).toBe(false);
    expect(retriesWindow(new ConfigError('CONFIG_INVALID', 'x'))).toBe(false);
    expect(retriesWindow(new StoreError('SCHEMA_MISMATCH', 'x'))).toBe(false);
    expect(retriesWindow(new DataError('FIELD_TYPE_MISMATCH', 'x'))).toBe(false);
  });
});

describe('waits', () => {
  it('back off exponentially with jitter between half and the whole, up to the cap', () => {
    for (let i = 0; i < 50; i++) {
      const first = backoffMs(1, 1000, 30_000);
      expect(first).toBeGreaterThanOrEqual(500);
      expect(first).toBeLessThanOrEqual(1000);
      const third = backoffMs(3, 1000, 30_000);
      expect(third).toBeGreaterThanOrEqual(2000);
      expect(third).toBeLessThanOrEqual(4000);
      expect(backoffMs(10, 1000, 30_000)).toBeLessThanOrEqual(30_000);
    }
  });

  it('poll at a tenth of the time waited, within the bounds, give or take a fifth', () => {
    const poll = { initialMs: 250, maxMs: 30_000 };
    for (let i = 0; i < 50; i++) {
      expect(pollDelayMs(0, poll)).toBeGreaterThanOrEqual(200);
      expect(pollDelayMs(0, poll)).toBeLessThanOrEqual(300);
      expect(pollDelayMs(100_000, poll)).toBeGreaterThanOrEqual(8000);
      expect(pollDelayMs(100_000, poll)).toBeLessThanOrEqual(12_000);
      expect(pollDelayMs(10_000_000, poll)).toBeLessThanOrEqual(36_000);
    }
  });

  it('poll at the aimed moment when it comes before the next poll, never closer than 20 ms, else as usual', () => {
    const poll = { initialMs: 250, maxMs: 30_000 };
    for (let i = 0; i < 100; i++) {
      expect(pollDelayMs(100_000, poll, 1234.4)).toBe(1234);
      expect(pollDelayMs(0, poll, 5)).toBe(20);
      // An aim past the next poll, or already past, changes nothing.
      expect(pollDelayMs(0, poll, 400)).toBeGreaterThanOrEqual(200);
      expect(pollDelayMs(0, poll, 400)).toBeLessThanOrEqual(300);
      expect(pollDelayMs(0, poll, -10)).toBeGreaterThanOrEqual(200);
      expect(pollDelayMs(0, poll, 0)).toBeLessThanOrEqual(300);
    }
  });
});
