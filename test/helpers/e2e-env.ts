import type { RunningSimulator } from '../../src/simulator/server.js';

/** The CLI's environment for a run against the simulator (or a page server): fast polling and retries, JSON logs. */
export function cliEnv(
  sim: Pick<RunningSimulator, 'baseUrl' | 'token'>,
  databaseUrl: string,
  extra: Record<string, string> = {},
): Record<string, string> {
  return {
    POST_REPORTS_BASE_URL: sim.baseUrl,
    POST_REPORTS_TOKEN: sim.token,
    DATABASE_URL: databaseUrl,
    POST_REPORTS_POLL_INITIAL_MS: '20',
    POST_REPORTS_POLL_MAX_MS: '100',
    POST_REPORTS_RETRY_MIN_DELAY_MS: '10',
    POST_REPORTS_LOCK_WAIT_MS: '0',
    LOG_FORMAT: 'json',
    ...extra,
  };
}
