/*
 * --metrics-file: the end of every run writes Prometheus text-format metrics (node_exporter's textfile collector),
 * which a parser of the format reads, and which say what the summary line says; a failed run keeps the last
 * success of the run before it.
 */
import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type RunningSimulator, startSimulator } from '../../../src/simulator/server.js';
import { runCli } from '../../helpers/cli.js';
import { createTestDatabase } from '../../helpers/database.js';
import { cliEnv } from '../../helpers/e2e-env.js';
import { type MetricFamily, parsePrometheusText } from '../../helpers/prometheus-text.js';
import { summaryOf } from '../../helpers/summary.js';

const db = await createTestDatabase();
let sim: RunningSimulator;
let dir: string;

beforeAll(async () => {
  sim = await startSimulator({ seed: 47, postsPerDay: 20 });
  dir = await mkdtemp(join(tmpdir(), 'metrics-file-'));
});
afterAll(async () => {
  await sim.close();
  await rm(dir, { recursive: true, force: true });
});

/** The one sample of `name` with these labels besides schema and organization, as a number. */
function sample(
  families: readonly MetricFamily[],
  name: string,
  labels: Record<string, string> = {},
): number {
  const family = families.find((f) => f.name === name);
  expect(family, name).toBeDefined();
  expect(family?.type).toBe('GAUGE');
  const found = family!.metrics.filter((m) =>
    Object.entries({ schema: 'metrics', organization: 'default', ...labels }).every(
      ([k, v]) => m.labels?.[k] === v,
    ),
  );
  expect(found, `${name} ${JSON.stringify(labels)}`).toHaveLength(1);
  return Number(found[0]!.value);
}

describe('--metrics-file (the built CLI)', () => {
  it('writes metrics a Prometheus parser reads, matching the summary line, and keeps the last success after a failure', async () => {
    const path = join(dir, 'post_reports.prom');
    const env = cliEnv(sim, db.url, { POST_REPORTS_SCHEMA: 'metrics' });
    const range = ['--from', '2026-03-02', '--to', '2026-03-22', '--window-days', '7'];

    const before = Date.now() / 1000; // wall clock on purpose: the run's timestamps are the wall clock's
    const ok = await runCli(['backfill', ...range, '--metrics-file', path], env);
    const after = Date.now() / 1000; // wall clock on purpose: the run's timestamps are the wall clock's
    expect(ok.code, ok.stderr).toBe(0);
    const summary = summaryOf(ok);
    const families = parsePrometheusText(await readFile(path, 'utf8'));
    for (const family of families) expect(family.name).toMatch(/^post_reports_[a-z_]+$/);
    expect(sample(families, 'post_reports_last_run_exit_code')).toBe(0);
    expect(sample(families, 'post_reports_last_run_duration_seconds')).toBe(summary.durationMs / 1000);
    expect(sample(families, 'post_reports_last_run_rows')).toBe(summary.posts);
    expect(summary.posts).toBeGreaterThan(0);
    for (const outcome of ['loaded', 'failed', 'skipped', 'interrupted'] as const) {
      expect(sample(families, 'post_reports_last_run_windows', { outcome })).toBe(summary.windows[outcome]);
    }
    expect(summary.windows.loaded).toBe(3);
    const success = sample(families, 'post_reports_last_success_timestamp_seconds');
    expect(success).toBeGreaterThanOrEqual(Math.floor(before));
    expect(success).toBeLessThanOrEqual(Math.ceil(after));
    expect(sample(families, 'post_reports_last_run_timestamp_seconds', { command: 'backfill' })).toBe(
      success,
    );

    // A window the API refuses: exit 3, one window failed, and the last success is still the run before.
    sim.refuseReports(['2026-03-09'], 'segment value no longer exists');
    const failed = await runCli(['backfill', ...range, '--reload', '--metrics-file', path], env);
    sim.refuseReports([]);
    expect(failed.code, failed.stderr).toBe(3);
    const failedSummary = summaryOf(failed);
    const again = parsePrometheusText(await readFile(path, 'utf8'));
    expect(sample(again, 'post_reports_last_run_exit_code')).toBe(3);
    expect(sample(again, 'post_reports_last_run_windows', { outcome: 'failed' })).toBe(1);
    expect(sample(again, 'post_reports_last_run_windows', { outcome: 'loaded' })).toBe(
      failedSummary.windows.loaded,
    );
    expect(sample(again, 'post_reports_last_run_rows')).toBe(failedSummary.posts);
    expect(sample(again, 'post_reports_last_success_timestamp_seconds')).toBe(success);
    expect(sample(again, 'post_reports_last_run_timestamp_seconds', { command: 'backfill' })).toBeGreaterThan(
      success,
    );
    // Written beside and renamed: nothing else is left in the directory.
    expect(await readdir(dir)).toEqual(['post_reports.prom']);
  });

  it('refuses a path that is no file, in one line, before anything runs', async () => {
    const env = cliEnv(sim, db.url, {
      POST_REPORTS_SCHEMA: 'metrics_bad',
      POST_REPORTS_METRICS_FILE: `${dir}/`,
    });
    const run = await runCli(['backfill', '--from', '2026-03-02', '--to', '2026-03-08'], env);
    expect(run.code).toBe(2);
    expect(run.stderr).toContain(
      `POST_REPORTS_METRICS_FILE (--metrics-file) must be the path of a file, got "${dir}/"`,
    );
  });
});
