import type { DestinationStream } from 'pino';
import { ApiClient, type RetryEvent } from '../../../src/api/client.js';
import { type ApiConfig, parseConfig } from '../../../src/config.js';
import { createLogger } from '../../../src/logger.js';
import type { RunningSimulator } from '../../../src/simulator/server.js';

/** A client of the simulator (or a page server) with fast retries and polls, and every log line it writes captured. */
export function clientFor(
  sim: Pick<RunningSimulator, 'baseUrl' | 'token'>,
  overrides: Record<string, string> = {},
): { client: ApiClient; config: ApiConfig; lines: string[]; retries: RetryEvent[] } {
  const config = parseConfig(
    {
      POST_REPORTS_BASE_URL: sim.baseUrl,
      POST_REPORTS_TOKEN: sim.token,
      POST_REPORTS_MAX_ATTEMPTS: '4',
      POST_REPORTS_RETRY_MIN_DELAY_MS: '1',
      POST_REPORTS_MAX_RETRY_MS: '20000',
      POST_REPORTS_REQUEST_TIMEOUT_MS: '10000',
      POST_REPORTS_POLL_INITIAL_MS: '5',
      POST_REPORTS_POLL_MAX_MS: '20',
      ...overrides,
    },
    {},
    { api: true, db: false },
  ).api;
  const lines: string[] = [];
  const destination: DestinationStream = { write: (line: string) => void lines.push(line) };
  // No `secrets` option: the scrubbing hook would hide a leak that these tests must see.
  const logger = createLogger({ level: 'trace', destination });
  const retries: RetryEvent[] = [];
  const client = new ApiClient(config, logger, { onRetry: (event) => void retries.push(event) });
  return { client, config, lines, retries };
}

/** Runs `fn` and returns what it threw (failing the test when it did not throw). */
export async function failure(fn: () => Promise<unknown>): Promise<Error> {
  try {
    await fn();
  } catch (error) {
    if (error instanceof Error) return error;
    throw new Error(`threw a non-error: ${String(error)}`);
  }
  throw new Error('expected a failure, but it succeeded');
}
