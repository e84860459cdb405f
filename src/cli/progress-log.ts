import type { Logger } from '../logger.js';
import type { ProgressEvent } from '../pipeline/run-summary.js';
import { ProgressTracker } from './progress-tracker.js';

/**
 * Progress for a scheduler's log (stderr is not a terminal): one structured `progress` line every `intervalMs`,
 * and one when the windows are planned, so that even a short run logs its size. A run of several organizations
 * logs a line for each organization under way, naming it.
 */
export class ProgressLog {
  private readonly trackers = new Map<string, ProgressTracker>();
  private timer: NodeJS.Timeout | undefined;

  constructor(
    private readonly logger: Logger,
    private readonly intervalMs: number,
  ) {}

  readonly onProgress = (event: ProgressEvent): void => {
    this.onOrganizationProgress('', event);
  };

  /** An event of one organization's run (of the run's own, for ''). */
  readonly onOrganizationProgress = (organization: string, event: ProgressEvent): void => {
    let tracker = this.trackers.get(organization);
    if (tracker === undefined) {
      tracker = new ProgressTracker(Date.now());
      this.trackers.set(organization, tracker);
    }
    tracker.apply(event, Date.now());
    if (event.type !== 'planned') return;
    if (this.timer === undefined) {
      if (this.intervalMs > 0) {
        this.timer = setInterval(() => this.writeAll(), this.intervalMs);
        // The interval alone never keeps a finished CLI alive.
        this.timer.unref();
      }
    }
    this.write(organization, tracker);
  };

  stop(): void {
    if (this.timer !== undefined) clearInterval(this.timer);
    this.timer = undefined;
  }

  private writeAll(): void {
    for (const [organization, tracker] of this.trackers) {
      const s = tracker.snapshot(Date.now());
      // An organization done is not logged again and again.
      if (organization !== '' && s.windowsTotal > 0 && s.windowsDone === s.windowsTotal) continue;
      this.write(organization, tracker);
    }
  }

  private write(organization: string, tracker: ProgressTracker): void {
    const s = tracker.snapshot(Date.now());
    this.logger.info(
      {
        ...(organization === '' ? {} : { organization }),
        progress: {
          windowsDone: s.windowsDone,
          windowsTotal: s.windowsTotal,
          windowsFailed: s.windowsFailed,
          posts: s.posts,
          postsPerSecond: Math.round(s.postsPerSecond),
          elapsedMs: s.elapsedMs,
          etaMs: s.etaMs,
        },
      },
      'progress',
    );
  }
}
