/*
 * How long a report poll waits: a share of the time waited so far (pollDelayMs). What is retried, and the backoff of
 * requests, windows and database waits, is the one error policy's (src/error-policy.ts).
 */

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
