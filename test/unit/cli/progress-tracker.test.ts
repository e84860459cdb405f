import { describe, expect, it } from 'vitest';
import { formatDuration, ProgressTracker } from '../../../src/cli/progress-tracker.js';

const w = (start: string) => ({ start, end: start });

describe('ProgressTracker', () => {
  it('counts windows, posts, rate and an ETA from the pace of finished windows', () => {
    const t = new ProgressTracker(0);
    expect(t.snapshot(0)).toMatchObject({ windowsTotal: 0, windowsDone: 0, posts: 0, etaMs: null });
    t.apply({ type: 'planned', windows: 4, skipped: 1 }, 1000);
    t.apply({ type: 'window-started', window: w('2026-01-05'), attempt: 1 }, 1000);
    t.apply({ type: 'page-staged', window: w('2026-01-05'), posts: 1000 }, 2000);
    expect(t.snapshot(3000)).toMatchObject({ windowsDone: 0, posts: 1000, postsPerSecond: 500, etaMs: null });
    t.apply({ type: 'window-loaded', window: w('2026-01-05'), posts: 1000, durationMs: 5 }, 3000);
    // One window in 2 s, three left: 6 s.
    expect(t.snapshot(3000)).toMatchObject({ windowsDone: 1, windowsTotal: 4, etaMs: 6000 });
    t.apply({ type: 'window-failed', window: w('2026-01-12'), error: 'boom' }, 3000);
    expect(t.snapshot(3000)).toMatchObject({ windowsDone: 2, windowsFailed: 1 });
  });

  it('a retried window is not done until its last attempt ends', () => {
    const t = new ProgressTracker(0);
    t.apply({ type: 'planned', windows: 1, skipped: 0 }, 0);
    t.apply({ type: 'window-failed', window: w('2026-01-05'), error: 'x' }, 10);
    t.apply({ type: 'window-started', window: w('2026-01-05'), attempt: 2 }, 20);
    expect(t.snapshot(20)).toMatchObject({ windowsDone: 0, windowsFailed: 0 });
    t.apply({ type: 'window-loaded', window: w('2026-01-05'), posts: 3, durationMs: 1 }, 30);
    expect(t.snapshot(30)).toMatchObject({ windowsDone: 1, windowsFailed: 0, etaMs: 0 });
  });

  it('formats durations', () => {
    expect(formatDuration(null)).toBe('?');
    expect(formatDuration(4_400)).toBe('4s');
    expect(formatDuration(65_000)).toBe('1m05s');
    expect(formatDuration(3_725_000)).toBe('1h02m');
  });
});
