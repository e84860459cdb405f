/*
 * The one retry of the database's transient faults (see DatabaseFault in src/error-policy.ts): a session lost, a
 * serialization failure or deadlock, a lock waited for past lock_timeout. Reconnecting, the window claims and the
 * commits all retry through it, with the policy's backoff (RETRY_WAITS.database) for as long as
 * POST_REPORTS_RECONNECT_WAIT_MS lasts from the first fault. The HTTP client's retry is its counterpart.
 */
import pRetry, { AbortError } from 'p-retry';
import type pg from 'pg';
import { type DatabaseFault, databaseFault, RETRY_WAITS } from '../error-policy.js';

export interface DatabaseRetryOptions {
  /** How long to go on retrying, from the first fault (POST_REPORTS_RECONNECT_WAIT_MS); 0: once. */
  readonly waitMs: number;
  readonly signal?: AbortSignal | undefined;
  /** Told before each retry waits. */
  readonly onRetry?: (fault: DatabaseFault, error: Error, attempt: number) => void;
}

/**
 * Runs `work` (given the attempt, from 1) until it succeeds, retrying it while it fails with a database fault and
 * the wait lasts. Any other error, an abort, or a fault once the wait is over is thrown as it is. `work` ends the
 * retries at once by throwing `finalError(error)`.
 */
export async function retryDatabase<T>(
  work: (attempt: number) => Promise<T>,
  options: DatabaseRetryOptions,
): Promise<T> {
  const { waitMs, signal, onRetry } = options;
  const { firstMs, maxMs } = RETRY_WAITS.database;
  let firstFault: number | undefined;
  return pRetry(work, {
    retries: Number.POSITIVE_INFINITY,
    minTimeout: firstMs,
    maxTimeout: maxMs,
    factor: 2,
    randomize: true,
    ...(signal ? { signal } : {}),
    shouldRetry: ({ error, attemptNumber }) => {
      const fault = databaseFault(error);
      if (fault === undefined || signal?.aborted) return false;
      const now = Date.now();
      firstFault ??= now;
      if (now - firstFault > waitMs) return false;
      onRetry?.(fault, error, attemptNumber);
      return true;
    },
  });
}

/** What waitWhileBusy's probe found: still busy. */
class StillBusy extends Error {}

/**
 * Asks `probe` again (every RETRY_WAITS.busy.everyMs) until it answers (not undefined): a wait for another process
 * to let go of what it holds, not for a fault, so it lasts until the answer or the signal. `onWait` is told once,
 * before the first wait. Errors of the probe end the wait as they are.
 */
export async function waitWhileBusy<T>(
  probe: () => Promise<T | undefined>,
  options: { readonly signal: AbortSignal; readonly onWait?: () => void },
): Promise<T> {
  const { signal, onWait } = options;
  return pRetry(
    async () => {
      const answer = await probe();
      if (answer === undefined) throw new StillBusy('still held by another process');
      return answer;
    },
    {
      retries: Number.POSITIVE_INFINITY,
      minTimeout: RETRY_WAITS.busy.everyMs,
      maxTimeout: RETRY_WAITS.busy.everyMs,
      factor: 1,
      randomize: false,
      signal,
      shouldRetry: ({ error, attemptNumber }) => {
        if (!(error instanceof StillBusy) || signal.aborted) return false;
        if (attemptNumber === 1) onWait?.();
        return true;
      },
    },
  );
}

/** An error that ends retryDatabase at once, thrown as `error` itself. */
export function finalError(error: unknown): Error {
  return new AbortError(error instanceof Error ? error : new Error(String(error)));
}

/**
 * Waits until the database accepts a session again (a restart, a failover), for up to `waitMs`; false when it did
 * not within that time, or the signal aborted.
 */
export async function waitForDatabase(pool: pg.Pool, waitMs: number, signal?: AbortSignal): Promise<boolean> {
  try {
    await retryDatabase(() => pool.query('SELECT 1'), { waitMs, signal });
    return true;
  } catch {
    return false;
  }
}
