/** The connector's clock: the dates a run loads up to and the ages of reports are read from it, never elsewhere. */
export interface Clock {
  now(): Date;
}

/**
 * A clock that runs from `startAt` (an instant, as replays and tests set it) at the system clock's pace; the
 * system clock itself when `startAt` is undefined.
 */
export function startClock(startAt?: string): Clock {
  if (startAt === undefined) return { now: () => new Date() };
  const offsetMs = Date.parse(startAt) - Date.now();
  return { now: () => new Date(Date.now() + offsetMs) };
}
