import { startClock } from '../../src/model/clock.js';

/**
 * The day every test runs on, whatever the date: a test that computed its dates before midnight and ran the CLI
 * after it would expect one day and see another. Later than every date a test loads as history, so that those
 * windows are closed, as they are on the wall clock.
 */
export const TODAY = '2026-11-25';

/**
 * Midday of TODAY: hours from either midnight, and further from the last one than the API's reuse period, so that
 * a report's age (its receipt less that period) falls on TODAY too.
 */
export const MIDDAY = `${TODAY}T12:00:00.000Z`;

// From MIDDAY when a test file first reads it, on at the system clock's pace: the runs of a file, one after the
// other, see the time go forward, as they would on the wall clock.
const clock = startClock(MIDDAY);

/** The tests' clock (ISO 8601): for the simulator's `now`, and the connector's (see withTestClock). */
export function testNow(): string {
  return clock.now().toISOString();
}

/**
 * `env` with the connector's clock (POST_REPORTS_NOW) at the tests' clock, unless `env` sets its own ('' for the
 * system clock). Read as each process starts, not as its environment is built: a test runs the CLI again and again
 * with one environment, and the age of a report, the reuse period and which report is newer need the time to go
 * forward from one run to the next, as it does on the wall clock.
 */
export function withTestClock(env: Record<string, string>): Record<string, string> {
  return { POST_REPORTS_NOW: testNow(), ...env };
}
