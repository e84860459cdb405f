/*
 * npm run bench: the three ratios of issue 6 (load throughput against the floor, end to end against the ideal,
 * peak memory), the CPU profile of the load path, and what the storage layout costs over a long history (commit
 * times, reader queries and size against plain tables), measured in one run on a database of its own. Prints a
 * table and writes bench/results.json. `--smoke` runs tiny sizes once, so that CI keeps the benchmark working.
 * `--only readers` (or any comma-separated list of load, e2e, memory, readers, scale-out, start) runs only those
 * parts. scale-out: many processes on one schema (a split backfill, an orchestrator's partitions) against one
 * alone; start: the CPU time of a run's start (start-time.ts).
 * The load figure loads narrow records (the simulator's) and wide ones (wide-records.ts); `--workloads` picks
 * among narrow, wide (written as hostile services write them), wide-tame (the same records with only their keys'
 * escapes) and wide-plain (no key written with an escape); the last two are for a diagnosis.
 * `--cli PATH[,PATH…]` (another build's dist/bin/main.js) and `--node PATH[,PATH…]` (node binaries) choose
 * what runs the connector children: every figure that runs the CLI is measured for each build on each node
 * binary, and the table and results.json say which; servers, floors and references stay on the bench's own
 * build and node. The connector's CPU time (user + system) is recorded beside its wall time. `--profiles DIR`
 * keeps the load figure's CPU profiles (.cpuprofile, for Chrome's DevTools) beside their summaries.
 * `--scale-out split,partitions` picks scale-out's figures (both by default); `--logs DIR` keeps the log of every
 * process scale-out starts, one file each, to see where a process waited.
 */
import { writeFileSync } from 'node:fs';
import { cpus, totalmem } from 'node:os';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import pg from 'pg';
import type { BenchContext } from './bench-context.js';
import { CLI, type Connector, connectorLabel, connectors } from './child.js';
import { benchEndToEnd, type EndToEndResult } from './end-to-end.js';
import {
  benchLoadThroughput,
  DEFAULT_WORKLOADS,
  type LoadResult,
  WORKLOADS,
  type Workload,
} from './load-throughput.js';
import { benchMemory, type MemoryResult } from './memory.js';
import { benchReaders, type ReadersResult, readersOptions } from './readers.js';
import {
  benchScaleOut,
  SCALE_OUT_FIGURES,
  type ScaleOutFigureName,
  type ScaleOutResult,
  scaleOutOptions,
} from './scale-out.js';
import { benchStart, type StartResult } from './start-time.js';

const RESULTS = fileURLToPath(new URL('../../bench/results.json', import.meta.url));
const PARTS = ['load', 'e2e', 'memory', 'readers', 'scale-out', 'start'];
const TARGETS = {
  load: 1.0,
  endToEnd: 1.1,
  memoryMb: 120,
  readersCommit: 1.5,
  readersQuery: 2,
  readersSize: 1.5,
  readersLatest: 1.2,
  /** A view costs its rewrite at planning, whatever the rows: a read this much slower at most is as fast. */
  readersLatestMs: 0.2,
  scaleOutSplit: 1.15,
  scaleOutPartitions: 1.3,
  startCpuMs: 200,
};

function seconds(ms: number): string {
  return `${(ms / 1000).toFixed(2)} s`;
}

function milliseconds(ms: number): string {
  return `${ms.toFixed(2)} ms`;
}

function megabytes(bytes: number): string {
  return `${(bytes / 2 ** 20).toFixed(1)} MB`;
}

function verdict(met: boolean): string {
  return met ? 'met' : 'NOT MET';
}

function table(rows: readonly (readonly string[])[]): string {
  const widths = rows[0]!.map((_, c) => Math.max(...rows.map((r) => r[c]!.length)));
  const line = (r: readonly string[]) => `| ${r.map((cell, c) => cell.padEnd(widths[c]!)).join(' | ')} |`;
  return [
    line(rows[0]!),
    `|${widths.map((w) => '-'.repeat(w + 2)).join('|')}|`,
    ...rows.slice(1).map(line),
  ].join('\n');
}

function readerRows(readers: ReadersResult): string[][] {
  const r = readers;
  const rows: string[][] = [
    [
      `Commit of 1-day windows of ${r.postsPerDay} posts, last ${r.commitSample} of ${r.commits} (${r.from}..${r.to}, --concurrency ${r.concurrency})`,
      `${milliseconds(r.lastCommitsMs)} median`,
      `first ${r.commitSample}: ${milliseconds(r.firstCommitsMs)} median`,
      `${r.commitRatio.toFixed(2)}×`,
      `≤ ${TARGETS.readersCommit}×`,
      verdict(r.commitRatio <= TARGETS.readersCommit),
    ],
  ];
  for (const q of r.queries) {
    rows.push([
      `  reader: ${q.query} (median of ${q.executions})`,
      milliseconds(q.connectorMs),
      `plain tables ${milliseconds(q.plainMs)}`,
      `${q.ratio.toFixed(2)}×`,
      `≤ ${TARGETS.readersQuery}×`,
      verdict(q.ratio <= TARGETS.readersQuery),
    ]);
  }
  for (const q of r.latest) {
    rows.push([
      `  latest view, ${q.history}: ${q.query} (median of ${q.executions})`,
      milliseconds(q.viewMs),
      `README's DISTINCT ON ${milliseconds(q.readmeMs)}`,
      `${q.ratio.toFixed(2)}×`,
      `≤ ${TARGETS.readersLatest}× or +${TARGETS.readersLatestMs} ms`,
      verdict(q.ratio <= TARGETS.readersLatest || q.viewMs - q.readmeMs <= TARGETS.readersLatestMs),
    ]);
  }
  rows.push([
    `  size of ${r.posts.toLocaleString('en')} posts + ${r.segments.toLocaleString('en')} segments (${r.connectorRelations} tables)`,
    megabytes(r.connectorBytes),
    `plain tables ${megabytes(r.plainBytes)}`,
    `${r.sizeRatio.toFixed(2)}×`,
    `≤ ${TARGETS.readersSize}×`,
    verdict(r.sizeRatio <= TARGETS.readersSize),
  ]);
  return rows;
}

function scaleOutRows(scaleOut: ScaleOutResult): string[][] {
  const s = scaleOut.split;
  const p = scaleOut.partitions;
  const rows: string[][] = [];
  if (s !== undefined)
    rows.push([
      `Backfill ${s.from}..${s.to} (${s.windows} windows, delay ${s.generationDelayMs} ms, latency ${s.latencyMs} ms) as ${s.processes} processes × --concurrency ${s.concurrencyEach} on one schema`,
      seconds(s.measuredMs),
      `1 process × --concurrency ${s.concurrencyAlone} ${seconds(s.referenceMs)}`,
      `${s.ratio.toFixed(2)}×`,
      `≤ ${TARGETS.scaleOutSplit}×`,
      verdict(s.ratio <= TARGETS.scaleOutSplit),
    ]);
  if (p !== undefined) {
    const first = p.ranges[0]!;
    const last = p.ranges.at(-1)!;
    rows.push([
      `${p.partitions} partitions of ${p.partitionDays} days (${first.from}..${last.to}, ${p.windows} windows) + ${p.duplicates} duplicates of the first at once (${p.processes} processes, delay ${p.generationDelayMs} ms)`,
      seconds(p.measuredMs),
      `one partition alone (${p.windowsEach} windows) ${seconds(p.referenceMs)}`,
      `${p.ratio.toFixed(2)}×`,
      `≤ ${TARGETS.scaleOutPartitions}×`,
      verdict(p.ratio <= TARGETS.scaleOutPartitions),
    ]);
  }
  return rows;
}

/** The rows of one figure with the column saying what the connector ran on put second. */
function on(connector: Connector, rows: readonly string[][]): string[][] {
  return rows.map(([figure, ...rest]) => [figure!, connectorLabel(connector), ...rest]);
}

function loadFigure(load: LoadResult): string {
  const posts = load.posts.toLocaleString('en');
  const small = load.smallPosts.toLocaleString('en');
  switch (load.workload) {
    case 'narrow':
      return `Load ${posts} posts (marginal over ${small})`;
    case 'wide':
      return `Load ${posts} wide posts, written as hostile services write them, in one window (marginal over ${small})`;
    case 'wide-tame':
      return `Load ${posts} wide posts, only keys escaped, in one window (marginal over ${small})`;
    case 'wide-plain':
      return `Load ${posts} wide posts, no key written with an escape, in one window (marginal over ${small})`;
  }
}

function loadRows(load: LoadResult): string[][] {
  const rows: string[][] = [
    [
      loadFigure(load),
      `${seconds(load.connectorMarginalMs)} (${Math.round(load.postsPerSecond).toLocaleString('en')} posts/s)`,
      `floor ${seconds(load.floorMs)} (fetch+JSON.parse ${seconds(load.floorFetchParseMs)} + COPY ${seconds(load.floorCopyMs)})`,
      `${load.ratio.toFixed(2)}×`,
      `≤ ${TARGETS.load}×`,
      verdict(load.ratio <= TARGETS.load),
    ],
  ];
  if (load.v8GrowthMarginalMs !== undefined && load.v8GrowthRatio !== undefined) {
    rows.push([
      '  same, POST_REPORTS_HEAP_GROWTH_PERCENT=0',
      seconds(load.v8GrowthMarginalMs),
      `floor ${seconds(load.floorMs)}`,
      `${load.v8GrowthRatio.toFixed(2)}×`,
      `≤ ${TARGETS.load}×`,
      verdict(load.v8GrowthRatio <= TARGETS.load),
    ]);
  }
  if (load.cpu !== null) {
    rows.push([
      '  CPU time of the connector (user+sys), marginal',
      seconds(load.cpu.marginalMs),
      `${load.posts.toLocaleString('en')}: ${seconds(load.cpu.bigMs)}, ${load.smallPosts.toLocaleString('en')}: ${seconds(load.cpu.smallMs)}`,
      '',
      '',
      '',
    ]);
  }
  if (load.databaseCpu !== null) {
    rows.push([
      '  CPU time of PostgreSQL meanwhile, marginal',
      seconds(load.databaseCpu.marginalMs),
      `floor's COPY: ${seconds(load.databaseCpu.floorCopyMs)}`,
      '',
      '',
      '',
    ]);
  }
  if (load.peakRssMb !== null) {
    rows.push([
      '  peak RSS of the connector (highest of its big runs)',
      `${Math.round(load.peakRssMb)} MB`,
      '',
      '',
      '',
      '',
    ]);
  }
  return rows;
}

function profileText(load: LoadResult): string {
  const p = load.profile;
  const what = load.workload === 'narrow' ? 'posts' : `${load.workload} posts`;
  let text = `\n\nWhere the time goes (CPU profile of the connector loading ${load.posts.toLocaleString('en')} ${what}, ${connectorLabel(load.connector)}, ${seconds(p.totalMs)} profiled`;
  if (load.pages) {
    text += `; ${load.pages.pages} pages of ${megabytes(load.pages.bytes / load.pages.pages)} on average, ${load.pages.withEscapedKeys} of them with a key written with an escape`;
  }
  text += ')';
  const paths = load.paths;
  if (paths !== undefined) {
    const share = (part: number, whole: number) => (whole === 0 ? '0' : ((100 * part) / whole).toFixed(1));
    text += `; pages read in one pass ${paths.pages - paths.pagesTheFullWay} of ${paths.pages} (${share(paths.pagesTheFullWay, paths.pages)} % the full way), values ${(paths.values - paths.valuesTheFullWay).toLocaleString('en')} of ${paths.values.toLocaleString('en')} (${share(paths.valuesTheFullWay, paths.values)} % the full way)`;
  } else text += '; this build does not log how it read its pages';
  text += ':\n';
  text += table([
    ['Step', 'Time', 'Share'],
    ...p.steps.map((s) => [s.step, `${Math.round(s.ms)} ms`, `${(s.share * 100).toFixed(1)} %`]),
  ]);
  text += '\n\nHottest functions (self time):\n';
  text += table([['Function', 'Self'], ...p.hottest.map((h) => [h.fn, `${Math.round(h.ms)} ms`])]);
  return text;
}

interface Results {
  readonly load: readonly LoadResult[];
  readonly endToEnd: readonly EndToEndResult[];
  readonly memory: readonly MemoryResult[];
  readonly readers: readonly (ReadersResult & { readonly connector: Connector })[];
  readonly scaleOut: readonly (ScaleOutResult & { readonly connector: Connector })[];
  readonly start: readonly StartResult[];
}

function report(results: Results): string {
  const rows: string[][] = [['Figure', 'Connector', 'Measured', 'Reference', 'Ratio', 'Target', 'Verdict']];
  for (const load of results.load) rows.push(...on(load.connector, loadRows(load)));
  for (const e2e of results.endToEnd) {
    rows.push(
      ...on(e2e.connector, [
        [
          `Backfill ${e2e.from}..${e2e.to} (${e2e.windows} windows, --concurrency ${e2e.concurrency}, delay ${e2e.generationDelayMs} ms, latency ${e2e.latencyMs} ms)`,
          seconds(e2e.connectorMs),
          `ideal ${seconds(e2e.idealMs)}`,
          `${e2e.ratio.toFixed(2)}×`,
          `≤ ${TARGETS.endToEnd}×`,
          verdict(e2e.ratio <= TARGETS.endToEnd),
        ],
      ]),
    );
  }
  for (const memory of results.memory) {
    rows.push(
      ...on(
        memory.connector,
        memory.sizes.map((size) => [
          `Peak RSS, one window of ${size.posts.toLocaleString('en')} posts${size.variant ? ` (${size.variant})` : ''}`,
          `${size.peakRssMb.toFixed(0)} MB`,
          '',
          '',
          `≤ ${TARGETS.memoryMb} MB`,
          verdict(size.peakRssMb <= TARGETS.memoryMb),
        ]),
      ),
    );
  }
  for (const readers of results.readers) rows.push(...on(readers.connector, readerRows(readers)));
  for (const scaleOut of results.scaleOut) rows.push(...on(scaleOut.connector, scaleOutRows(scaleOut)));
  for (const start of results.start) {
    rows.push(
      ...on(start.connector, [
        [
          `Start of a run (a backfill of a window already loaded), CPU time, median of ${start.runs}`,
          `${Math.round(start.cpuMs)} ms`,
          `wall ${Math.round(start.wallMs)} ms`,
          '',
          `≤ ${TARGETS.startCpuMs} ms`,
          verdict(start.cpuMs <= TARGETS.startCpuMs),
        ],
      ]),
    );
  }
  let text = table(rows);
  for (const load of results.load) text += profileText(load);
  return text;
}

function list(value: string | undefined): string[] | undefined {
  return value
    ?.split(',')
    .map((item) => item.trim())
    .filter((item) => item !== '');
}

/** Each figure but load once per connector, with the context naming it. */
async function perConnector<T>(
  context: BenchContext,
  run: (context: BenchContext) => Promise<T>,
): Promise<(T & { readonly connector: Connector })[]> {
  const out: (T & { readonly connector: Connector })[] = [];
  for (const connector of context.connectors) {
    out.push({ ...(await run({ ...context, connector })), connector });
  }
  return out;
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      smoke: { type: 'boolean', default: false },
      'database-url': { type: 'string', default: 'postgres://postgres@127.0.0.1:5432/postgres' },
      only: { type: 'string' },
      repetitions: { type: 'string' },
      cli: { type: 'string' },
      node: { type: 'string' },
      workloads: { type: 'string' },
      profiles: { type: 'string' },
      'scale-out': { type: 'string' },
      logs: { type: 'string' },
    },
  });
  const smoke = values.smoke === true;
  const only = new Set((values.only ?? PARTS.join(',')).split(','));
  // A misspelt part would run nothing and still overwrite results.json.
  const unknown = [...only].filter((part) => !PARTS.includes(part));
  if (unknown.length > 0)
    throw new Error(`--only: unknown part ${unknown.join(', ')} (parts: ${PARTS.join(', ')})`);
  const workloads = (list(values.workloads) ?? DEFAULT_WORKLOADS) as Workload[];
  const unknownWorkloads = workloads.filter((w) => !WORKLOADS.includes(w));
  if (unknownWorkloads.length > 0)
    throw new Error(
      `--workloads: unknown ${unknownWorkloads.join(', ')} (workloads: ${WORKLOADS.join(', ')})`,
    );
  const figures = (list(values['scale-out']) ?? [...SCALE_OUT_FIGURES]) as ScaleOutFigureName[];
  const unknownFigures = figures.filter((f) => !(SCALE_OUT_FIGURES as readonly string[]).includes(f));
  if (unknownFigures.length > 0)
    throw new Error(
      `--scale-out: unknown ${unknownFigures.join(', ')} (figures: ${SCALE_OUT_FIGURES.join(', ')})`,
    );
  const runOn = connectors(list(values.cli) ?? [CLI], list(values.node) ?? [process.execPath]);
  const serverUrl = values['database-url']!;
  const name = `bench_${Date.now().toString(36)}`;
  const admin = new pg.Client({ connectionString: serverUrl });
  await admin.connect();
  await admin.query(`CREATE DATABASE ${pg.escapeIdentifier(name)}`);
  const url = new URL(serverUrl);
  url.pathname = `/${name}`;
  const pool = new pg.Pool({ connectionString: url.toString(), max: 2 });
  // DROP DATABASE … WITH (FORCE) at the end ends any connection still open; that is expected.
  pool.on('error', () => {});
  const machine = `${cpus().length} cores (${cpus()[0]?.model.trim() ?? 'unknown'}), ${Math.round(totalmem() / 2 ** 30)} GiB, bench on Node ${process.versions.node}, PostgreSQL ${(await pool.query<{ server_version: string }>('SHOW server_version')).rows[0]?.server_version ?? '?'}`;
  const context: BenchContext = {
    databaseUrl: url.toString(),
    pool,
    smoke,
    repetitions: Number(values.repetitions ?? (smoke ? 1 : 3)),
    connectors: runOn,
    connector: runOn[0]!,
    ...(values.profiles === undefined ? {} : { profileDir: values.profiles }),
    log: (line) => process.stderr.write(`bench: ${line}\n`),
  };
  context.log(`${smoke ? 'smoke run' : 'full run'} on ${machine}, database ${name}`);
  const connectorLines = runOn.map((c) => `${connectorLabel(c)}: ${c.node} ${c.cli}`).join('\n  ');
  context.log(`connectors:\n  ${connectorLines}`);
  try {
    const results: Results = {
      load: only.has('load') ? await benchLoadThroughput(context, workloads) : [],
      endToEnd: only.has('e2e') ? await perConnector(context, benchEndToEnd) : [],
      memory: only.has('memory') ? await perConnector(context, benchMemory) : [],
      readers: only.has('readers')
        ? await perConnector(context, (c) => benchReaders(c, readersOptions(smoke)))
        : [],
      scaleOut: only.has('scale-out')
        ? await perConnector(context, (c) =>
            benchScaleOut(c, scaleOutOptions(smoke), {
              figures,
              ...(values.logs === undefined ? {} : { logDir: values.logs }),
            }),
          )
        : [],
      start: only.has('start') ? await benchStart(context) : [],
    };
    process.stdout.write(`${report(results)}\n\nMachine: ${machine}\nConnectors:\n  ${connectorLines}\n`);
    writeFileSync(
      RESULTS,
      `${JSON.stringify({ date: new Date().toISOString(), smoke, machine, repetitions: context.repetitions, targets: TARGETS, connectors: runOn, ...results }, null, 2)}\n`,
    );
    context.log(`results written to ${RESULTS}`);
  } finally {
    await pool.end();
    await admin.query(`DROP DATABASE IF EXISTS ${pg.escapeIdentifier(name)} WITH (FORCE)`);
    await admin.end();
  }
}

await main();
