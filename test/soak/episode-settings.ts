import { addDays } from '../../src/model/dates.js';
import type { Random } from '../../src/simulator/random.js';

/** The environment of every run of the soak, on top of the simulator's and the database's. */
export const CLEAN_ENV = {
  LOG_LEVEL: 'debug',
  POST_REPORTS_WINDOW_ATTEMPTS: '3',
  POST_REPORTS_MAX_ATTEMPTS: '10',
  POST_REPORTS_REQUEST_TIMEOUT_MS: '5000',
  POST_REPORTS_STALL_TIMEOUT_MS: '30000',
  // A killed run's lock dies with its connection; a run after it may have to wait for PostgreSQL to notice.
  POST_REPORTS_LOCK_WAIT_MS: '15000',
};

/** Past the API's report reuse period (3 h), on the simulator's clock: a re-run creates new reports. */
export const PAST_REUSE_MS = 3 * 3_600_000 + 60_000;

/** Monday of a random week in 2025, so that ranges start on the default grid or cut it. */
export function randomStart(random: Random): string {
  return addDays('2025-01-06', 7 * random.int(48) + random.int(7));
}

/**
 * Where an episode's clock starts (the simulator's, and through each run's POST_REPORTS_NOW the connector's):
 * drawn from the seed, after every episode's dates, so that a seed replays the same whatever the day and hour.
 */
export function episodeStart(random: Random): string {
  return new Date(Date.parse('2026-02-02T00:00:00Z') + random.int(24 * 60) * 60_000).toISOString();
}
