import { describe, expect, it } from 'vitest';
import { renderMetrics, renderMetricsOf } from '../../../src/cli/metrics-file.js';

const ENDED = new Date('2026-11-25T12:00:00Z');
const run = (exitCode: number, posts: number) => ({
  command: 'sync' as const,
  exitCode,
  durationMs: 2000,
  posts,
  cursor: '2026-11-24',
  windows: { planned: 2, loaded: 2, skipped: 0, failed: 0, interrupted: 0, notStarted: 0, byOthers: 0 },
});

describe('the metrics of a run of several organizations', () => {
  it('lists each metric once, with a sample of each organization', () => {
    const text = renderMetricsOf(
      [
        { target: { schema: 's', organization: 'acme' }, run: run(0, 10), previousSuccess: undefined },
        { target: { schema: 's', organization: 'globex' }, run: run(2, 0), previousSuccess: 1_700_000_000 },
      ],
      ENDED,
    );
    const helps = text.split('\n').filter((line) => line.startsWith('# HELP '));
    expect(new Set(helps).size).toBe(helps.length);
    expect(text).toContain('post_reports_last_run_exit_code{schema="s",organization="acme"} 0\n');
    expect(text).toContain('post_reports_last_run_exit_code{schema="s",organization="globex"} 2\n');
    expect(text).toContain(
      `post_reports_last_success_timestamp_seconds{schema="s",organization="acme"} ${ENDED.getTime() / 1000}\n`,
    );
    // A failed organization keeps its last success.
    expect(text).toContain(
      'post_reports_last_success_timestamp_seconds{schema="s",organization="globex"} 1700000000\n',
    );
    // Each metric's samples follow its HELP and TYPE lines.
    const exitLines = text.split('\n').filter((line) => line.includes('post_reports_last_run_exit_code'));
    expect(exitLines.map((line) => line.split(' ')[0])).toEqual([
      '#',
      '#',
      'post_reports_last_run_exit_code{schema="s",organization="acme"}',
      'post_reports_last_run_exit_code{schema="s",organization="globex"}',
    ]);
  });

  it('is for one organization what a run of it alone writes', () => {
    const target = { schema: 's', organization: 'acme' };
    expect(renderMetricsOf([{ target, run: run(0, 10), previousSuccess: undefined }], ENDED)).toBe(
      renderMetrics(target, run(0, 10), ENDED, undefined),
    );
  });
});
