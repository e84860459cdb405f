/** The longest Retry-After honoured; a longer one is capped (the total retry time still bounds the wait). */
const MAX_RETRY_AFTER_MS = 3_600_000;

/**
 * The wait a Retry-After header asks for, in milliseconds: delta-seconds or an HTTP date (relative to `now`).
 * Undefined when the header is absent or unreadable; a date in the past means no wait.
 */
export function retryAfterMs(header: string | null | undefined, now: number): number | undefined {
  if (header === null || header === undefined) return undefined;
  const text = header.trim();
  if (text === '') return undefined;
  if (/^\d+$/.test(text)) return Math.min(MAX_RETRY_AFTER_MS, Number(text) * 1000);
  // An HTTP date always names its weekday and month; Date.parse would also read "-5" as a year.
  if (!/[A-Za-z]/.test(text)) return undefined;
  const date = Date.parse(text);
  if (Number.isNaN(date)) return undefined;
  return Math.min(MAX_RETRY_AFTER_MS, Math.max(0, date - now));
}
