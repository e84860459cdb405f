import type { ProgressEvent } from '../pipeline/run-summary.js';

/** What a progress display shows at one moment. */
export interface ProgressSnapshot {
  /** Windows to load in this run (known once the run has planned them; 0 before). */
  readonly windowsTotal: number;
  /** Windows committed or finally failed. */
  readonly windowsDone: number;
  readonly windowsFailed: number;
  /** Posts staged so far (a window's posts count as soon as its pages are written). */
  readonly posts: number;
  readonly elapsedMs: number;
  /** Posts per second since the run planned its windows. */
  readonly postsPerSecond: number;
  /** Estimated time left, from the pace of finished windows; null until one has finished. */
  readonly etaMs: number | null;
}

/** Folds the pipeline's ProgressEvent stream into counters; the clock is passed in, so it can be tested. */
export class ProgressTracker {
  private total = 0;
  private readonly finished = new Set<string>();
  private readonly failed = new Set<string>();
  private posts = 0;
  private startedAt: number;

  constructor(now: number) {
    this.startedAt = now;
  }

  apply(event: ProgressEvent, now: number): void {
    switch (event.type) {
      case 'planned':
        this.total = event.windows;
        this.startedAt = now;
        break;
      case 'page-staged':
        this.posts += event.posts;
        break;
      case 'window-loaded':
        this.finished.add(key(event.window));
        this.failed.delete(key(event.window));
        break;
      case 'window-failed':
        this.finished.add(key(event.window));
        this.failed.add(key(event.window));
        break;
      case 'window-started':
        // A retried window is not done until its last attempt ends.
        if (event.attempt > 1) {
          this.finished.delete(key(event.window));
          this.failed.delete(key(event.window));
        }
        break;
    }
  }

  snapshot(now: number): ProgressSnapshot {
    const elapsedMs = Math.max(0, now - this.startedAt);
    const done = this.finished.size;
    const left = Math.max(0, this.total - done);
    return {
      windowsTotal: this.total,
      windowsDone: done,
      windowsFailed: this.failed.size,
      posts: this.posts,
      elapsedMs,
      postsPerSecond: elapsedMs > 0 ? (this.posts * 1000) / elapsedMs : 0,
      etaMs: done === 0 ? null : left === 0 ? 0 : Math.round((elapsedMs / done) * left),
    };
  }
}

function key(window: { readonly start: string; readonly end: string }): string {
  return `${window.start}..${window.end}`;
}

/** 65_000 → "1m05s"; null → "?". */
export function formatDuration(ms: number | null): string {
  if (ms === null) return '?';
  const seconds = Math.round(ms / 1000);
  if (seconds < 60) return `${seconds}s`;
  const minutes = Math.floor(seconds / 60);
  if (minutes < 60) return `${minutes}m${String(seconds % 60).padStart(2, '0')}s`;
  return `${Math.floor(minutes / 60)}h${String(minutes % 60).padStart(2, '0')}m`;
}
