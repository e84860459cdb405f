import { getEventListeners } from 'node:events';
import { describe, expect, it } from 'vitest';
import { ApiError, EtlError } from '../../../src/errors.js';
import { RunStop } from '../../../src/pipeline/run-stop.js';
import { Watchdog } from '../../../src/pipeline/watchdog.js';

describe('RunStop', () => {
  it('a rejected token stops the run: its signal and every window’s abort, with the token error', () => {
    const stop = new RunStop();
    const window = stop.child();
    expect(stop.check(new ApiError('API_HTTP_ERROR', 'GET /x answered 500', { status: 500 }))).toBe(false);
    expect(stop.signal.aborted).toBe(false);
    const rejected = new ApiError('TOKEN_REJECTED', 'GET /x answered 401', { status: 401 });
    expect(stop.check(rejected)).toBe(true);
    expect(stop.cause).toBe(rejected);
    expect(window.aborted).toBe(true);
    expect(window.reason).toBe(rejected);
    // Once stopped, every later error is part of the stop.
    expect(stop.check(new EtlError('ABORTED', 'x'))).toBe(true);
  });

  it('an interrupt is not a cause: the run is interrupted, not stopped', () => {
    const controller = new AbortController();
    const stop = new RunStop(controller.signal);
    controller.abort(new EtlError('ABORTED', 'interrupted by SIGTERM'));
    expect(stop.signal.aborted).toBe(true);
    expect(stop.check(new ApiError('TOKEN_REJECTED', 'x', { status: 403 }))).toBe(true);
    expect(stop.cause).toBeUndefined();
  });

  it('windows and watchdogs add no listener to the run’s signal, however many are in flight', () => {
    const controller = new AbortController();
    const stop = new RunStop(controller.signal);
    const watchdogs = Array.from({ length: 50 }, () => new Watchdog(60_000, stop.child()));
    for (const w of watchdogs) w.signal.addEventListener('abort', () => {});
    expect(getEventListeners(controller.signal, 'abort')).toHaveLength(0);
    expect(getEventListeners(stop.signal, 'abort')).toHaveLength(0);
    controller.abort(new Error('stop'));
    expect(watchdogs.every((w) => w.signal.aborted)).toBe(true);
    for (const w of watchdogs) w.stop();
  });
});
