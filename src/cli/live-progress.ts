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
  private readonly bar: cliProgress.SingleBar;
  private stopped = false;
  /** A stream for the logger: each write is printed above the bar. */
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
    this.bar = this.bars.create(0, 0, { posts: 0, rate: '0', left: '?' });
    const bars = this.bars;
    this.logSink = new Writable({
      write(chunk: Buffer | string, _encoding, callback) {
        const text = chunk.toString();
        bars.log(text.endsWith('\n') ? text : `${text}\n`);
        callback();
      },
    });
  }

  readonly onProgress = (event: ProgressEvent): void => {
    if (this.stopped) return;
    const now = Date.now();
    this.tracker.apply(event, now);
    const s = this.tracker.snapshot(now);
    this.bar.setTotal(s.windowsTotal);
    this.bar.update(s.windowsDone, {
      posts: s.posts,
      rate: s.postsPerSecond.toFixed(0),
      left: formatDuration(s.etaMs),
    });
  };

  stop(): void {
    if (this.stopped) return;
    this.stopped = true;
    // The last events may have come after the last redraw.
    if (this.bars.isActive) this.bars.update();
    this.bars.stop();
  }
}
