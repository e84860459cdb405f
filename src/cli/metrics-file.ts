/*
 * The run's figures as Prometheus text-format metrics, for node_exporter's textfile collector: written to a file of
 * its own beside the target and renamed over it, so the collector never reads half a file. The metrics are the
 * last run's (gauges, replaced by every run), not counters kept across runs, hence no `_total`; the last success
 * is carried over from the file a failed run replaces.
 */
import { readFile, rename, rm, writeFile } from 'node:fs/promises';
import type { RunSummary } from '../pipeline/run-summary.js';

/** Whom the figures are of: the labels of every metric. */
export interface MetricsTarget {
  readonly schema: string;
  readonly organization: string;
}

/** What a run reports, whether it ran (its summary) or could not start (its exit code and duration only). */
export type MetricsRun = Pick<RunSummary, 'command' | 'exitCode' | 'durationMs'> &
  Partial<Pick<RunSummary, 'windows' | 'posts' | 'cursor'>>;

const LAST_SUCCESS = 'post_reports_last_success_timestamp_seconds';

interface Metric {
  readonly name: string;
  readonly help: string;
  readonly samples: readonly { readonly labels?: Readonly<Record<string, string>>; readonly value: number }[];
}

/** A label value as the text format writes it: backslash, double quote and line feed escaped. */
function labelValue(value: string): string {
  return value.replace(/\\/g, '\\\\').replace(/"/g, '\\"').replace(/\n/g, '\\n');
}

function labelsText(labels: Readonly<Record<string, string>>): string {
  if (Object.keys(labels).length === 0) return '';
  return `{${Object.entries(labels)
    .map(([k, v]) => `${k}="${labelValue(v)}"`)
    .join(',')}}`;
}

/** Seconds since the epoch of a YYYY-MM-DD date's start (UTC). */
function dateSeconds(date: string): number {
  return Date.parse(`${date}T00:00:00Z`) / 1000;
}

/** How metrics are written: `targetLabels: false` leaves out schema and organization (a Pushgateway's grouping key). */
export interface RenderOptions {
  readonly targetLabels?: boolean;
}

/**
 * The metrics text of a run that ended at `endedAt`. `previousSuccess` is the last success the file being replaced
 * recorded (seconds), kept when this run did not succeed.
 */
export function renderMetrics(
  target: MetricsTarget,
  run: MetricsRun,
  endedAt: Date,
  previousSuccess: number | undefined,
  options: RenderOptions = {},
): string {
  return renderMetricsOf([{ target, run, previousSuccess }], endedAt, options);
}

/** One target's figures in a metrics file of several (a run of several organizations). */
export interface MetricsEntry {
  readonly target: MetricsTarget;
  readonly run: MetricsRun;
  readonly previousSuccess: number | undefined;
}

/** The metrics of several targets: each metric once, with a sample of each target. */
export function renderMetricsOf(
  entries: readonly MetricsEntry[],
  endedAt: Date,
  options: RenderOptions = {},
): string {
  const byName = new Map<string, { help: string; samples: Metric['samples'][number][] }>();
  for (const entry of entries) {
    for (const metric of metricsOf(entry.target, entry.run, endedAt, entry.previousSuccess, options)) {
      const found = byName.get(metric.name) ?? { help: metric.help, samples: [] };
      found.samples.push(...metric.samples);
      byName.set(metric.name, found);
    }
  }
  const lines: string[] = [];
  for (const [name, metric] of byName) {
    lines.push(`# HELP ${name} ${metric.help}`, `# TYPE ${name} gauge`);
    for (const sample of metric.samples) {
      lines.push(`${name}${labelsText(sample.labels ?? {})} ${sample.value}`);
    }
  }
  return `${lines.join('\n')}\n`;
}

function metricsOf(
  target: MetricsTarget,
  run: MetricsRun,
  endedAt: Date,
  previousSuccess: number | undefined,
  options: RenderOptions,
): Metric[] {
  // A Pushgateway's grouping key carries schema and organization: pushed metrics must not carry them again.
  const base: Record<string, string> =
    options.targetLabels === false ? {} : { schema: target.schema, organization: target.organization };
  const ended = endedAt.getTime() / 1000;
  const success = run.exitCode === 0 ? ended : previousSuccess;
  const metrics: Metric[] = [
    {
      name: 'post_reports_last_run_timestamp_seconds',
      help: 'When the last run (backfill or sync) ended.',
      samples: [{ labels: { ...base, command: run.command }, value: ended }],
    },
    {
      name: 'post_reports_last_run_exit_code',
      help: 'The exit code of the last run (0: every window loaded; the README lists the others).',
      samples: [{ labels: base, value: run.exitCode }],
    },
    {
      name: 'post_reports_last_run_duration_seconds',
      help: 'How long the last run took.',
      samples: [{ labels: base, value: run.durationMs / 1000 }],
    },
  ];
  if (success !== undefined) {
    metrics.push({
      name: LAST_SUCCESS,
      help: 'When the last run that exited 0 ended.',
      samples: [{ labels: base, value: success }],
    });
  }
  if (run.windows !== undefined) {
    const { loaded, failed, skipped, interrupted } = run.windows;
    metrics.push({
      name: 'post_reports_last_run_windows',
      help: 'Windows of the last run by outcome.',
      samples: Object.entries({ loaded, failed, skipped, interrupted }).map(([outcome, value]) => ({
        labels: { ...base, outcome },
        value,
      })),
    });
  }
  if (run.posts !== undefined) {
    metrics.push({
      name: 'post_reports_last_run_rows',
      help: 'Rows of posts the last run loaded.',
      samples: [{ labels: base, value: run.posts }],
    });
  }
  if (run.cursor !== undefined && run.cursor !== null) {
    metrics.push({
      name: 'post_reports_loaded_through_timestamp_seconds',
      help: 'The start (UTC) of the last date loaded with every date before it (the sync cursor).',
      samples: [{ labels: base, value: dateSeconds(run.cursor) }],
    });
  }
  return metrics;
}

/** The last success the metrics file at `path` records for `target`, if it exists and records one. */
async function previousSuccess(path: string, target: MetricsTarget): Promise<number | undefined> {
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch {
    return undefined;
  }
  const prefix = `${LAST_SUCCESS}${labelsText({ schema: target.schema, organization: target.organization })} `;
  const line = text.split('\n').find((l) => l.startsWith(prefix));
  const value = line === undefined ? Number.NaN : Number(line.slice(prefix.length));
  return Number.isFinite(value) ? value : undefined;
}

/** Writes the run's metrics to `path`: a file beside it first, then renamed over it. */
export async function writeMetricsFile(
  path: string,
  target: MetricsTarget,
  run: MetricsRun,
  endedAt: Date,
): Promise<void> {
  await writeMetricsFileOf(path, [{ target, run }], endedAt);
}

/** Writes the metrics of several targets (each organization of a run) to `path`, as writeMetricsFile does. */
export async function writeMetricsFileOf(
  path: string,
  runs: readonly { readonly target: MetricsTarget; readonly run: MetricsRun }[],
  endedAt: Date,
): Promise<void> {
  const entries: MetricsEntry[] = [];
  for (const { target, run } of runs) {
    entries.push({ target, run, previousSuccess: await previousSuccess(path, target) });
  }
  const text = renderMetricsOf(entries, endedAt);
  // Not *.prom: the collector reads only those, and must never see this one half written.
  const temporary = `${path}.${process.pid}.tmp`;
  try {
    await writeFile(temporary, text, { mode: 0o644 });
    await rename(temporary, path);
  } finally {
    await rm(temporary, { force: true });
  }
}
