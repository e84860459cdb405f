import { Writable } from 'node:stream';
import cliProgress from 'cli-progress';
import type { ProgressEvent } from '../pipeline/run-summary.js';
import { formatDuration, ProgressTracker } from './progress-tracker.js';

const FORMAT = ' {bar} {value}/{total} windows | {posts} posts | {rate} posts/s | ETA {left}';

/** One bar: its run's counters, and the bar once it knows how many windows there are. */
interface Line {
  readonly tracker: ProgressTracker;
  /** Drawn from the first event that knows how many windows there are: a bar of 0/0 would draw full. */
  bar: cliProgress.SingleBar | undefined;
}

/**
 * The progress bar on a terminal: windows done/total, posts, rate and ETA, redrawn in place; a bar for each
 * organization of a run of several, named. Log lines go through `logSink`, which prints them above the bars
 * instead of tearing them.
 */
export class LiveProgress {
  private readonly bars: cliProgress.MultiBar;
  private readonly lines = new Map<string, Line>();
  /** The width the organizations' names are padded to, so that their bars line up. */
  private width = 0;
  private stopped = false;
  /** A stream for the logger: each write is printed above the bar (straight to the terminal when none is drawn). */
  readonly logSink: Writable;

  constructor(stream: NodeJS.WriteStream) {
    this.bars = new cliProgress.MultiBar(
      {
        stream,
        format: FORMAT,
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
        const drawn = [...this.lines.values()].some((l) => l.bar !== undefined);
        if (drawn && !this.stopped) this.bars.log(line);
        else stream.write(line);
        callback();
      },
    });
  }

  readonly onProgress = (event: ProgressEvent): void => {
    this.onOrganizationProgress('', event);
  };

  /** Shows each of these organizations on a bar of its own, named; returns their onProgress. */
  organizations(ids: readonly string[]): (organization: string, event: ProgressEvent) => void {
    this.width = Math.max(0, ...ids.map((id) => id.length));
    return this.onOrganizationProgress;
  }

  /** An event of one organization's run (of the run's own, for ''). */
  readonly onOrganizationProgress = (organization: string, event: ProgressEvent): void => {
    if (this.stopped) return;
    const now = Date.now();
    let line = this.lines.get(organization);
    if (line === undefined) {
      line = { tracker: new ProgressTracker(now), bar: undefined };
      this.lines.set(organization, line);
    }
    line.tracker.apply(event, now);
    const s = line.tracker.snapshot(now);
    const payload = {
      organization: organization.padEnd(this.width),
      posts: s.posts,
      rate: s.postsPerSecond.toFixed(0),
      left: formatDuration(s.etaMs),
    };
    if (line.bar === undefined) {
      if (s.windowsTotal === 0) return;
      line.bar = this.bars.create(
        s.windowsTotal,
        s.windowsDone,
        payload,
        organization === '' ? {} : { format: ` {organization}${FORMAT}` },
      );
      return;
    }
    line.bar.setTotal(s.windowsTotal);
    line.bar.update(s.windowsDone, payload);
  };

  stop(): void {
    if (this.stopped) return;
    this.stopped = true;
    if (![...this.lines.values()].some((l) => l.bar !== undefined)) return;
    // The last events may have come after the last redraw.
    if (this.bars.isActive) this.bars.update();
    this.bars.stop();
  }
}
