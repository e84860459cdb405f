import type { Logger } from '../logger.js';
import type { ProgressEvent } from '../pipeline/run-summary.js';
import { ProgressTracker } from './progress-tracker.js';

/**
 * Progress for a scheduler's log (stderr is not a terminal): one structured `progress` line every `intervalMs`,
 * and one when the windows are planned, so that even a short run logs its size.
 */
export class ProgressLog {
  private readonly tracker = new ProgressTracker(Date.now());
  private timer: NodeJS.Timeout | undefined;

  constructor(
    private readonly logger: Logger,
    private readonly intervalMs: number,
  ) {}

  readonly onProgress = (event: ProgressEvent): void => {
    this.tracker.apply(event, Date.now());
    if (event.type === 'planned' && this.timer === undefined) {
      this.write();
      if (this.intervalMs > 0) {
        this.timer = setInterval(() => this.write(), this.intervalMs);
        // The interval alone never keeps a finished CLI alive.
        this.timer.unref();
      }
    }
  };

  stop(): void {
    if (this.timer !== undefined) clearInterval(this.timer);
    this.timer = undefined;
  }

  private write(): void {
    const s = this.tracker.snapshot(Date.now());
    this.logger.info(
      {
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
