import type { Logger } from '../logger.js';
import type { ProgressEvent } from '../pipeline/run-summary.js';
import { ProgressLog } from './progress-log.js';

/** A run's progress output: a live bar on a terminal, periodic `progress` log lines otherwise. */
export interface ProgressReporter {
  /** Where the logger must write while the live bar is drawn; undefined when there is no bar. */
  readonly logSink: NodeJS.WritableStream | undefined;
  /** Starts reporting with the run's logger; returns the run's onProgress. */
  start(logger: Logger): (event: ProgressEvent) => void;
  /** Starts reporting each of these organizations of a run of several; returns their onProgress. */
  startOrganizations(
    logger: Logger,
    organizations: readonly string[],
  ): (organization: string, event: ProgressEvent) => void;
  stop(): void;
}

/**
 * Chooses the live bar when `stderr` is a terminal, and the log line every `intervalMs` otherwise; nothing at
 * all when `quiet`. The bar's code loads only for a terminal: a scheduled run starts without it.
 */
export async function createProgressReporter(
  stderr: NodeJS.WritableStream,
  intervalMs: number,
  quiet = false,
): Promise<ProgressReporter> {
  if (quiet) {
    return { logSink: undefined, start: () => () => {}, startOrganizations: () => () => {}, stop: () => {} };
  }
  const tty = (stderr as Partial<NodeJS.WriteStream>).isTTY === true;
  if (tty) {
    const { LiveProgress } = await import('./live-progress.js');
    const live = new LiveProgress(stderr as NodeJS.WriteStream);
    return {
      logSink: live.logSink,
      start: () => live.onProgress,
      startOrganizations: (_logger, organizations) => live.organizations(organizations),
      stop: () => live.stop(),
    };
  }
  let log: ProgressLog | undefined;
  return {
    logSink: undefined,
    start(logger) {
      log = new ProgressLog(logger, intervalMs);
      return log.onProgress;
    },
    startOrganizations(logger) {
      log = new ProgressLog(logger, intervalMs);
      return log.onOrganizationProgress;
    },
    stop: () => log?.stop(),
  };
}
