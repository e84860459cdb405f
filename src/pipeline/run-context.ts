import type pg from 'pg';
import type { ApiClient } from '../api/client.js';
import type { Config } from '../config.js';
import type { Loader } from '../load/loader.js';
import type { Scope } from '../load/scope.js';
import type { Logger } from '../logger.js';
import type { Clock } from '../model/clock.js';
import type { Filters } from '../model/filters.js';
import type { RunCounters } from './run-counters.js';
import type { RunStop } from './run-stop.js';
import type { ProgressEvent } from './run-summary.js';

/** Runs a task when a slot of a budget shared with other runs is free (the run of several organizations). */
export type WindowSlots = <T>(task: () => Promise<T>) => Promise<T>;

/** What every run needs: configuration, a logger, and optionally a way to stop it and to watch it. */
export interface RunContext {
  readonly config: Config;
  readonly logger: Logger;
  readonly signal?: AbortSignal;
  readonly onProgress?: (event: ProgressEvent) => void;
  /** The connector's clock (default: the one the configuration starts, the system clock unless set). */
  readonly clock?: Clock;
  /** A window budget shared with the runs of other organizations of the same process, besides its own. */
  readonly windowSlots?: WindowSlots;
}

/** What a run's windows share once it is under way. */
export interface ActiveRun {
  readonly config: Config;
  /** The run's logger (with its run id). */
  readonly logger: Logger;
  /** Stops every window: SIGINT/SIGTERM, or a token the API rejects. */
  readonly stop: RunStop;
  readonly api: ApiClient;
  readonly loader: Loader;
  readonly pool: pg.Pool;
  /** The run's filters, canonical. */
  readonly filters: Filters;
  readonly counters: RunCounters;
  /** The clock every date and report age of the run is read from. */
  readonly clock: Clock;
  readonly onProgress?: (event: ProgressEvent) => void;
}

/** Where the run's rows and state are: the configured schema and organization. */
export function runScope(config: Config): Scope {
  return { schema: config.db.schema, org: config.db.organization };
}
