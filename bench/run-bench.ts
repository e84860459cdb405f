/*
 * npm run bench: the three ratios of issue 6 (load throughput against the floor, end to end against the ideal,
 * peak memory), the CPU profile of the load path, and what the storage layout costs over a long history (commit
 * times, reader queries and size against plain tables), measured in one run on a database of its own. Prints a
 * table and writes bench/results.json. `--smoke` runs tiny sizes once, so that CI keeps the benchmark working.
 * `--only readers` (or any comma-separated list of load, e2e, memory, readers, scale-out) runs only those parts.
 * scale-out: many processes on one schema (a split backfill, an orchestrator's partitions) against one alone.
 */
import { writeFileSync } from 'node:fs';
import { cpus, totalmem } from 'node:os';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import pg from 'pg';
import type { BenchContext } from './bench-context.js';
import { benchEndToEnd, type EndToEndResult } from './end-to-end.js';
import { benchLoadThroughput, type LoadResult } from './load-throughput.js';
import { benchMemory, type MemoryResult } from './memory.js';
import { benchReaders, type ReadersResult, readersOptions } from './readers.js';
import { benchScaleOut, type ScaleOutResult, scaleOutOptions } from './scale-out.js';

const RESULTS = fileURLToPath(new URL('../../bench/results.json', import.meta.url));
const PARTS = ['load', 'e2e', 'memory', 'readers', 'scale-out'];
const TARGETS = {
  load: 1.25,
  endToEnd: 1.15,
  memoryMb: 150,
  readersCommit: 1.5,
  readersQuery: 2,
  readersSize: 1.5,
  scaleOutSplit: 1.15,
  scaleOutPartitions: 2,
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
  const first = p.ranges[0]!;
  const last = p.ranges.at(-1)!;
  return [
    [
      `Backfill ${s.from}..${s.to} (${s.windows} windows, delay ${s.generationDelayMs} ms, latency ${s.latencyMs} ms) as ${s.processes} processes × --concurrency ${s.concurrencyEach} on one schema`,
      seconds(s.measuredMs),
      `1 process × --concurrency ${s.concurrencyAlone} ${seconds(s.referenceMs)}`,
      `${s.ratio.toFixed(2)}×`,
      `≤ ${TARGETS.scaleOutSplit}×`,
      verdict(s.ratio <= TARGETS.scaleOutSplit),
    ],
    [
      `${p.partitions} partitions of ${p.partitionDays} days (${first.from}..${last.to}, ${p.windows} windows) + ${p.duplicates} duplicates of the first at once (${p.processes} processes, delay ${p.generationDelayMs} ms)`,
      seconds(p.measuredMs),
      `one partition alone (${p.windowsEach} windows) ${seconds(p.referenceMs)}`,
      `${p.ratio.toFixed(2)}×`,
      `≤ ${TARGETS.scaleOutPartitions}×`,
      verdict(p.ratio <= TARGETS.scaleOutPartitions),
    ],
  ];
}

function report(
  load?: LoadResult,
  e2e?: EndToEndResult,
  memory?: MemoryResult,
  readers?: ReadersResult,
  scaleOut?: ScaleOutResult,
): string {
  const rows: string[][] = [['Figure', 'Measured', 'Reference', 'Ratio', 'Target', 'Verdict']];
  if (load) {
    rows.push([
      `Load ${load.posts.toLocaleString('en')} posts (marginal over ${load.smallPosts.toLocaleString('en')})`,
      `${seconds(load.connectorMarginalMs)} (${Math.round(load.postsPerSecond).toLocaleString('en')} posts/s)`,
      `floor ${seconds(load.floorMs)} (fetch+JSON.parse ${seconds(load.floorFetchParseMs)} + COPY ${seconds(load.floorCopyMs)})`,
      `${load.ratio.toFixed(2)}×`,
      `≤ ${TARGETS.load}×`,
      verdict(load.ratio <= TARGETS.load),
    ]);
    rows.push([
      '  same, POST_REPORTS_HEAP_GROWTH_PERCENT=0',
      seconds(load.v8GrowthMarginalMs),
      `floor ${seconds(load.floorMs)}`,
      `${load.v8GrowthRatio.toFixed(2)}×`,
      `≤ ${TARGETS.load}×`,
      verdict(load.v8GrowthRatio <= TARGETS.load),
    ]);
  }
  if (e2e) {
    rows.push([
      `Backfill ${e2e.from}..${e2e.to} (${e2e.windows} windows, --concurrency ${e2e.concurrency}, delay ${e2e.generationDelayMs} ms, latency ${e2e.latencyMs} ms)`,
      seconds(e2e.connectorMs),
      `ideal ${seconds(e2e.idealMs)}`,
      `${e2e.ratio.toFixed(2)}×`,
      `≤ ${TARGETS.endToEnd}×`,
      verdict(e2e.ratio <= TARGETS.endToEnd),
    ]);
  }
  if (memory) {
    for (const size of memory.sizes) {
      rows.push([
        `Peak RSS, one window of ${size.posts.toLocaleString('en')} posts${size.variant ? ` (${size.variant})` : ''}`,
        `${size.peakRssMb.toFixed(0)} MB`,
        '',
        '',
        `≤ ${TARGETS.memoryMb} MB`,
        verdict(size.peakRssMb <= TARGETS.memoryMb),
      ]);
    }
  }
  if (readers) rows.push(...readerRows(readers));
  if (scaleOut) rows.push(...scaleOutRows(scaleOut));
  let text = table(rows);
  if (load) {
    const p = load.profile;
    text += `\n\nWhere the time goes (CPU profile of the connector loading ${load.posts.toLocaleString('en')} posts, ${seconds(p.totalMs)} profiled):\n`;
    text += table([
      ['Step', 'Time', 'Share'],
      ...p.steps.map((s) => [s.step, `${Math.round(s.ms)} ms`, `${(s.share * 100).toFixed(1)} %`]),
    ]);
    text += '\n\nHottest functions (self time):\n';
    text += table([['Function', 'Self'], ...p.hottest.map((h) => [h.fn, `${Math.round(h.ms)} ms`])]);
  }
  return text;
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      smoke: { type: 'boolean', default: false },
      'database-url': { type: 'string', default: 'postgres://postgres@127.0.0.1:5432/postgres' },
      only: { type: 'string' },
      repetitions: { type: 'string' },
    },
  });
  const smoke = values.smoke === true;
  const only = new Set((values.only ?? PARTS.join(',')).split(','));
  // A misspelt part would run nothing and still overwrite results.json.
  const unknown = [...only].filter((part) => !PARTS.includes(part));
  if (unknown.length > 0)
    throw new Error(`--only: unknown part ${unknown.join(', ')} (parts: ${PARTS.join(', ')})`);
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
  const machine = `${cpus().length} cores (${cpus()[0]?.model.trim() ?? 'unknown'}), ${Math.round(totalmem() / 2 ** 30)} GiB, Node ${process.versions.node}, PostgreSQL ${(await pool.query<{ server_version: string }>('SHOW server_version')).rows[0]?.server_version ?? '?'}`;
  const context: BenchContext = {
    databaseUrl: url.toString(),
    pool,
    smoke,
    repetitions: Number(values.repetitions ?? (smoke ? 1 : 3)),
    log: (line) => process.stderr.write(`bench: ${line}\n`),
  };
  context.log(`${smoke ? 'smoke run' : 'full run'} on ${machine}, database ${name}`);
  try {
    const load = only.has('load') ? await benchLoadThroughput(context) : undefined;
    const e2e = only.has('e2e') ? await benchEndToEnd(context) : undefined;
    const memory = only.has('memory') ? await benchMemory(context) : undefined;
    const readers = only.has('readers') ? await benchReaders(context, readersOptions(smoke)) : undefined;
    const scaleOut = only.has('scale-out') ? await benchScaleOut(context, scaleOutOptions(smoke)) : undefined;
    process.stdout.write(`${report(load, e2e, memory, readers, scaleOut)}\n\nMachine: ${machine}\n`);
    writeFileSync(
      RESULTS,
      `${JSON.stringify({ date: new Date().toISOString(), smoke, machine, repetitions: context.repetitions, targets: TARGETS, load, endToEnd: e2e, memory, readers, scaleOut }, null, 2)}\n`,
    );
    context.log(`results written to ${RESULTS}`);
  } finally {
    await pool.end();
    await admin.query(`DROP DATABASE IF EXISTS ${pg.escapeIdentifier(name)} WITH (FORCE)`);
    await admin.end();
  }
}

await main();
