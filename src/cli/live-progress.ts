import { Writable } from 'node:stream';
import cliProgress from 'cli-progress';
import type { ProgressEvent } from '../pipeline/run-summary.js';
import { formatDuration, ProgressTracker } from './progress-tracker.js';

/**
 * The progress bar on a terminal: windows done/total, posts, rate and ETA, redrawn in place. Log lines go through
 * `logSink`, which prints them above the bar instead of tearing it.
 */
export class LiveProgress {
  private readonly tracker = new ProgressTracker(Date.now());
  private readonly bars: cliProgress.MultiBar;
  /** Drawn from the first event that knows how many windows there are: a bar of 0/0 would draw full. */
  private bar: cliProgress.SingleBar | undefined;
  private stopped = false;
  /** A stream for the logger: each write is printed above the bar (straight to the terminal when none is drawn). */
  readonly logSink: Writable;

  constructor(stream: NodeJS.WriteStream) {
    this.bars = new cliProgress.MultiBar(
      {
        stream,
        format: ' {bar} {value}/{total} windows | {posts} posts | {rate} posts/s | ETA {left}',
        barsize: 24,
        hideCursor: true,
        clearOnComplete: false,
        stopOnComplete: false,
        etaBuffer: 1,
        fps: 5,
        // SIGINT and SIGTERM belong to the run: it rolls back and exits 130.
        gracefulExit: false,
      },
      cliProgress.Presets.shades_classic,
    );
    this.logSink = new Writable({
      write: (chunk: Buffer | string, _encoding, callback) => {
        const text = chunk.toString();
        const line = text.endsWith('\n') ? text : `${text}\n`;
        if (this.bar !== undefined && !this.stopped) this.bars.log(line);
        else stream.write(line);
        callback();
      },
    });
  }

  readonly onProgress = (event: ProgressEvent): void => {
    if (this.stopped) return;
    const now = Date.now();
    this.tracker.apply(event, now);
    const s = this.tracker.snapshot(now);
    const payload = { posts: s.posts, rate: s.postsPerSecond.toFixed(0), left: formatDuration(s.etaMs) };
    if (this.bar === undefined) {
      if (s.windowsTotal === 0) return;
      this.bar = this.bars.create(s.windowsTotal, s.windowsDone, payload);
      return;
    }
    this.bar.setTotal(s.windowsTotal);
    this.bar.update(s.windowsDone, payload);
  };

  stop(): void {
    if (this.stopped) return;
    this.stopped = true;
    if (this.bar === undefined) return;
    // The last events may have come after the last redraw.
    if (this.bars.isActive) this.bars.update();
    this.bars.stop();
  }
}
