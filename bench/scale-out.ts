/*
 * Figure 5: many processes on one schema. Each window is claimed by one process (a PostgreSQL advisory lock), so
 * that N identical commands split a range, and a process that meets a window another holds does its other windows
 * first, then waits and counts it as done by the other (`windows.byOthers`). Two figures, each against its
 * reference in the same run, each side on a fresh schema with a fresh simulator (no report reused):
 *
 * - split: a year's backfill as 4 identical commands started at once (--concurrency 2 each) against 1 process with
 *   the same total concurrency (--concurrency 8). What it costs to spread one load over processes.
 * - partitions: what an orchestrator does: 4 four-week partitions of one backfill started at the same moment, plus
 *   2 duplicate triggers of the first, against one partition alone (default --concurrency). What it costs that
 *   they share one schema (a migration, claims, commits) and that duplicates wait for the windows they meet.
 *
 * Wall time runs from the first spawn to the last process's exit. Every process must exit 0, and the windows the
 * processes loaded must add up to the range with no post loaded twice.
 */
import { createWriteStream, mkdirSync } from 'node:fs';
import { loadavg } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { cutWindows } from '../src/pipeline/windows.js';
import { type BenchContext, cliEnv } from './bench-context.js';
import { runCli, startSimulatorChild } from './child.js';
import { median } from './stats.js';

const id = pg.escapeIdentifier;

interface Simulator {
  readonly postsPerDay: number;
  readonly generationDelayMs: number;
  readonly latencyMs: number;
}

export interface ScaleOutOptions {
  readonly split: Simulator & {
    readonly from: string;
    readonly to: string;
    readonly processes: number;
    /** --concurrency of each of the processes. */
    readonly concurrencyEach: number;
    /** --concurrency of the one process of the reference: processes × concurrencyEach. */
    readonly concurrencyAlone: number;
  };
  readonly partitions: Simulator & {
    /** The first partition's first date (a Monday: the 7-day windows are ISO weeks). */
    readonly from: string;
    readonly partitions: number;
    readonly partitionDays: number;
    /** Duplicate triggers of the first partition. */
    readonly duplicates: number;
  };
}

/**
 * A year of 7-day windows (52) at full size, with end-to-end.ts's delay and latency; 8 windows and short delays
 * under --smoke, so that CI keeps the figure working.
 */
export function scaleOutOptions(smoke: boolean): ScaleOutOptions {
  return {
    split: {
      from: '2025-01-06',
      to: smoke ? '2025-03-02' : '2026-01-04',
      postsPerDay: 50,
      generationDelayMs: smoke ? 300 : 2000,
      latencyMs: smoke ? 10 : 50,
      processes: 4,
      concurrencyEach: 2,
      concurrencyAlone: 8,
    },
    partitions: {
      from: '2025-01-06',
      partitions: 4,
      partitionDays: 28,
      duplicates: 2,
      postsPerDay: 50,
      generationDelayMs: smoke ? 500 : 4000,
      latencyMs: smoke ? 10 : 50,
    },
  };
}

/** One backfill of a measurement: its range, and its --concurrency (the CLI's default when absent). */
interface Backfill {
  readonly from: string;
  readonly to: string;
  readonly concurrency?: number;
}

function backfillArgs(b: Backfill): string[] {
  const args = ['--from', b.from, '--to', b.to];
  if (b.concurrency !== undefined) args.push('--concurrency', String(b.concurrency));
  return args;
}

/** One CLI process of a measurement: its summary, and when (from the common start) it got where. */
export interface ProcessRun {
  readonly args: string;
  readonly exitCode: number | null;
  readonly status: string;
  readonly planned: number;
  readonly skipped: number;
  readonly loaded: number;
  readonly byOthers: number;
  readonly posts: number;
  readonly reportsCreated: number;
  /** The run's own durationMs (from 'run started' to its summary). */
  readonly durationMs: number;
  /** From the common start: its 'run started' line (Node's start and the CLI's imports), … */
  readonly startedAtMs: number | null;
  /** … its 'windows planned' line (the connection, the run lock, a migration or the wait for one), … */
  readonly plannedAtMs: number | null;
  /** … its last commit, … */
  readonly lastCommitAtMs: number | null;
  /** … and its exit. */
  readonly exitAtMs: number;
  /** Groups it found held by another process when it came back to them. */
  readonly waitedFor: number;
}

export interface MeasurementRun {
  readonly wallMs: number;
  /**
   * The machine's 1-minute load average as the processes started: every process of a measurement shares the
   * machine's cores, so that another load there (tests run meanwhile) weighs more on many processes than on one.
   */
  readonly loadBefore: number;
  /** The last commit of any process, from the start: what follows it is waiting, summing up and exiting. */
  readonly lastCommitAtMs: number | null;
  readonly processes: readonly ProcessRun[];
}

export interface ScaleOutFigure {
  readonly processes: number;
  readonly windows: number;
  readonly postsPerDay: number;
  readonly generationDelayMs: number;
  readonly latencyMs: number;
  /** Median wall time of the processes together, and of the reference. */
  readonly measuredMs: number;
  readonly referenceMs: number;
  /** Median of the repetitions' ratios. */
  readonly ratio: number;
  readonly samples: { readonly measured: number[]; readonly reference: number[] };
  /** Every process of every repetition, for a reader who wants to see where the time went. */
  readonly runs: { readonly measured: MeasurementRun[]; readonly reference: MeasurementRun[] };
}

/** The figures of scale-out (--scale-out picks some; both by default). */
export const SCALE_OUT_FIGURES = ['split', 'partitions'] as const;
export type ScaleOutFigureName = (typeof SCALE_OUT_FIGURES)[number];

export interface ScaleOutResult {
  /** Absent when not measured (--scale-out). */
  readonly split?: ScaleOutFigure & {
    readonly from: string;
    readonly to: string;
    readonly concurrencyEach: number;
    readonly concurrencyAlone: number;
  };
  readonly partitions?: ScaleOutFigure & {
    readonly partitions: number;
    readonly partitionDays: number;
    readonly duplicates: number;
    /** The partitions' ranges, the first one's duplicates aside. */
    readonly ranges: readonly { readonly from: string; readonly to: string }[];
    readonly windowsEach: number;
  };
}

/** The pino lines worth a time: when a process started, planned, committed, and waited for another. */
interface LogTimes {
  started: number | null;
  planned: number | null;
  lastCommit: number | null;
  waits: number;
}

function logWatcher(): { onStderr: (chunk: string) => void; times: LogTimes } {
  const times: LogTimes = { started: null, planned: null, lastCommit: null, waits: 0 };
  let pending = '';
  const onStderr = (chunk: string): void => {
    pending += chunk;
    const lines = pending.split('\n');
    pending = lines.pop() ?? '';
    for (const line of lines) {
      if (!line.startsWith('{')) continue;
      let entry: { msg?: unknown; time?: unknown };
      try {
        entry = JSON.parse(line) as { msg?: unknown; time?: unknown };
      } catch {
        continue;
      }
      if (typeof entry.time !== 'number') continue;
      if (entry.msg === 'run started') times.started = entry.time;
      else if (entry.msg === 'windows planned') times.planned = entry.time;
      else if (entry.msg === 'windows committed') times.lastCommit = entry.time;
      else if (entry.msg === 'waiting for another process to finish these windows') times.waits += 1;
    }
  };
  return { onStderr, times };
}

function count(summary: Record<string, unknown> | undefined, key: string): number {
  const windows = summary?.windows as Record<string, unknown> | undefined;
  const value = windows?.[key];
  return typeof value === 'number' ? value : 0;
}

function field(summary: Record<string, unknown> | undefined, key: string): number {
  const value = summary?.[key];
  return typeof value === 'number' ? value : 0;
}

async function dropSchema(context: BenchContext, schema: string): Promise<void> {
  await context.pool.query(`DROP SCHEMA IF EXISTS ${id(schema)} CASCADE`);
}

/**
 * Starts one backfill per entry of `commands` at once on a fresh schema against a fresh simulator, and waits for
 * the last to exit. Throws unless every process exits 0 and the windows loaded add up to `windows`, each once.
 */
async function measure(
  context: BenchContext,
  label: string,
  simulator: Simulator,
  schema: string,
  commands: readonly Backfill[],
  windows: number,
  logDir: string | undefined,
): Promise<MeasurementRun> {
  await dropSchema(context, schema);
  if (logDir !== undefined) mkdirSync(logDir, { recursive: true });
  const sim = await startSimulatorChild(simulator);
  try {
    // Info: the lines the phases are timed by. Every side of every figure logs the same.
    const env = cliEnv(context, sim.baseUrl, { LOG_LEVEL: 'info' });
    const loadBefore = loadavg()[0] ?? 0;
    const t0 = Date.now();
    const started = performance.now();
    const children = commands.map((command, i) => {
      const watcher = logWatcher();
      const args = backfillArgs(command);
      const log =
        logDir === undefined
          ? undefined
          : createWriteStream(join(logDir, `${label.replaceAll(' ', '-')}-${i}.log`));
      const onStderr = (chunk: string): void => {
        watcher.onStderr(chunk);
        log?.write(chunk);
      };
      return {
        args: args.join(' '),
        windows: cutWindows(command.from, command.to, 7).length,
        times: watcher.times,
        result: runCli(context.connector, ['backfill', ...args, '--schema', schema], env, [], onStderr).then(
          (result) => {
            log?.end();
            return { result, exitAtMs: performance.now() - started };
          },
        ),
      };
    });
    const ended = await Promise.all(children.map((c) => c.result));
    const wallMs = performance.now() - started;
    const at = (time: number | null): number | null => (time === null ? null : time - t0);
    const processes: ProcessRun[] = children.map((child, i) => {
      const { result, exitAtMs } = ended[i]!;
      const summary = result.summary;
      return {
        args: child.args,
        exitCode: result.code,
        status: typeof summary?.status === 'string' ? summary.status : 'none',
        planned: count(summary, 'planned'),
        skipped: count(summary, 'skipped'),
        loaded: count(summary, 'loaded'),
        byOthers: count(summary, 'byOthers'),
        posts: field(summary, 'posts'),
        reportsCreated: field(summary, 'reportsCreated'),
        durationMs: field(summary, 'durationMs'),
        startedAtMs: at(child.times.started),
        plannedAtMs: at(child.times.planned),
        lastCommitAtMs: at(child.times.lastCommit),
        exitAtMs,
        waitedFor: child.times.waits,
      };
    });
    for (const [i, p] of processes.entries()) {
      if (p.exitCode !== 0)
        throw new Error(
          `${label}: backfill ${p.args} exited ${p.exitCode}: ${ended[i]!.result.stderr.slice(-2000)}`,
        );
      // Every window of its range is loaded by it, by another (while it waited), or was before it planned.
      const own = children[i]!.windows;
      if (p.loaded + p.byOthers + p.skipped !== own)
        throw new Error(
          `${label}: backfill ${p.args}: loaded ${p.loaded} + by others ${p.byOthers} + skipped ${p.skipped} is not its ${own} windows`,
        );
    }
    const loaded = processes.reduce((n, p) => n + p.loaded, 0);
    if (loaded !== windows)
      throw new Error(`${label}: the processes loaded ${loaded} windows between them, not ${windows}`);
    const posts = processes.reduce((n, p) => n + p.posts, 0);
    const stored = await context.pool.query<{ n: string }>(`SELECT count(*) AS n FROM ${id(schema)}.posts`);
    if (Number(stored.rows[0]!.n) !== posts)
      throw new Error(`${label}: ${stored.rows[0]!.n} posts stored, the processes loaded ${posts}`);
    const commits = processes.map((p) => p.lastCommitAtMs).filter((t): t is number => t !== null);
    return {
      wallMs,
      loadBefore,
      lastCommitAtMs: commits.length > 0 ? Math.max(...commits) : null,
      processes,
    };
  } finally {
    await sim.stop();
    await dropSchema(context, schema);
  }
}

function describe(label: string, run: MeasurementRun): string {
  const ms = (t: number | null): string => (t === null ? '-' : String(Math.round(t)));
  const parts = run.processes.map(
    (p) =>
      `[loaded ${p.loaded}, by others ${p.byOthers}, skipped ${p.skipped}; started ${ms(p.startedAtMs)}, planned ${ms(p.plannedAtMs)}, last commit ${ms(p.lastCommitAtMs)}, exit ${ms(p.exitAtMs)}]`,
  );
  return `${label} ${Math.round(run.wallMs)} ms (last commit ${ms(run.lastCommitAtMs)}, load ${run.loadBefore.toFixed(2)} before): ${parts.join(' ')}`;
}

/**
 * Measures both sides `repetitions` times, alternating which goes first so that a drift of the machine falls on
 * both alike.
 */
async function figure(
  context: BenchContext,
  name: string,
  measured: (rep: number) => Promise<MeasurementRun>,
  reference: (rep: number) => Promise<MeasurementRun>,
): Promise<Pick<ScaleOutFigure, 'measuredMs' | 'referenceMs' | 'ratio' | 'samples' | 'runs'>> {
  const runs = { measured: [] as MeasurementRun[], reference: [] as MeasurementRun[] };
  for (let rep = 0; rep < context.repetitions; rep++) {
    if (rep % 2 === 0) {
      runs.measured.push(await measured(rep));
      runs.reference.push(await reference(rep));
    } else {
      runs.reference.push(await reference(rep));
      runs.measured.push(await measured(rep));
    }
    const m = runs.measured.at(-1)!;
    const r = runs.reference.at(-1)!;
    context.log(`scale-out ${name} rep ${rep + 1}: ${describe('processes', m)}`);
    context.log(`scale-out ${name} rep ${rep + 1}: ${describe('reference', r)}`);
    context.log(`scale-out ${name} rep ${rep + 1}: ratio ${(m.wallMs / r.wallMs).toFixed(3)}`);
  }
  const samples = {
    measured: runs.measured.map((r) => r.wallMs),
    reference: runs.reference.map((r) => r.wallMs),
  };
  return {
    measuredMs: median(samples.measured),
    referenceMs: median(samples.reference),
    ratio: median(samples.measured.map((m, i) => m / samples.reference[i]!)),
    samples,
    runs,
  };
}

async function benchSplit(
  context: BenchContext,
  options: ScaleOutOptions,
  logDir: string | undefined,
): Promise<NonNullable<ScaleOutResult['split']>> {
  const o = options.split;
  const windows = cutWindows(o.from, o.to, 7).length;
  context.log(
    `scale-out split: ${o.from}..${o.to} (${windows} windows) as ${o.processes} × --concurrency ${o.concurrencyEach} against 1 × --concurrency ${o.concurrencyAlone}`,
  );
  const result = await figure(
    context,
    'split',
    (rep) =>
      measure(
        context,
        `split rep ${rep + 1}`,
        o,
        `bench_scale_split_${rep}`,
        Array.from({ length: o.processes }, () => ({
          from: o.from,
          to: o.to,
          concurrency: o.concurrencyEach,
        })),
        windows,
        logDir,
      ),
    (rep) =>
      measure(
        context,
        `split reference rep ${rep + 1}`,
        o,
        `bench_scale_alone_${rep}`,
        [{ from: o.from, to: o.to, concurrency: o.concurrencyAlone }],
        windows,
        logDir,
      ),
  );
  return {
    from: o.from,
    to: o.to,
    processes: o.processes,
    concurrencyEach: o.concurrencyEach,
    concurrencyAlone: o.concurrencyAlone,
    windows,
    postsPerDay: o.postsPerDay,
    generationDelayMs: o.generationDelayMs,
    latencyMs: o.latencyMs,
    ...result,
  };
}

function addDays(date: string, days: number): string {
  const d = new Date(`${date}T00:00:00Z`);
  d.setUTCDate(d.getUTCDate() + days);
  return d.toISOString().slice(0, 10);
}

async function benchPartitions(
  context: BenchContext,
  options: ScaleOutOptions,
  logDir: string | undefined,
): Promise<NonNullable<ScaleOutResult['partitions']>> {
  const o = options.partitions;
  const ranges = Array.from({ length: o.partitions }, (_, i) => ({
    from: addDays(o.from, i * o.partitionDays),
    to: addDays(o.from, (i + 1) * o.partitionDays - 1),
  }));
  const windowsEach = cutWindows(ranges[0]!.from, ranges[0]!.to, 7).length;
  const windows = ranges.reduce((n, r) => n + cutWindows(r.from, r.to, 7).length, 0);
  // The CLI's default --concurrency, as an orchestrator would start them.
  const commands: Backfill[] = [...ranges, ...Array.from({ length: o.duplicates }, () => ranges[0]!)];
  context.log(
    `scale-out partitions: ${o.partitions} partitions of ${o.partitionDays} days from ${o.from} + ${o.duplicates} duplicates of the first (${commands.length} processes, ${windows} windows) against one partition alone`,
  );
  const result = await figure(
    context,
    'partitions',
    (rep) =>
      measure(context, `partitions rep ${rep + 1}`, o, `bench_scale_parts_${rep}`, commands, windows, logDir),
    (rep) =>
      measure(
        context,
        `partitions reference rep ${rep + 1}`,
        o,
        `bench_scale_part_${rep}`,
        [ranges[0]!],
        windowsEach,
        logDir,
      ),
  );
  return {
    partitions: o.partitions,
    partitionDays: o.partitionDays,
    duplicates: o.duplicates,
    ranges,
    processes: commands.length,
    windows,
    windowsEach,
    postsPerDay: o.postsPerDay,
    generationDelayMs: o.generationDelayMs,
    latencyMs: o.latencyMs,
    ...result,
  };
}

/** Which figures to measure, and where to keep every process's log (one file per process; absent: not kept). */
export interface ScaleOutRun {
  readonly figures?: readonly ScaleOutFigureName[];
  readonly logDir?: string;
}

export async function benchScaleOut(
  context: BenchContext,
  options: ScaleOutOptions,
  run: ScaleOutRun = {},
): Promise<ScaleOutResult> {
  const figures = run.figures ?? SCALE_OUT_FIGURES;
  const split = figures.includes('split') ? await benchSplit(context, options, run.logDir) : undefined;
  const partitions = figures.includes('partitions')
    ? await benchPartitions(context, options, run.logDir)
    : undefined;
  return { ...(split === undefined ? {} : { split }), ...(partitions === undefined ? {} : { partitions }) };
}
