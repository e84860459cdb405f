/*
 * Figure 1: the connector's marginal time for a big window against the floor of the same work done the bare way.
 * Both read the same page bodies: the simulator's narrow records from a caching replay proxy (replay-server.ts),
 * warmed once beforehand, and wide records (wide-records.ts) from a server that makes every page before it starts
 * (wide-server.ts). Each figure is measured for every build and node binary asked for, with the connector's CPU
 * time beside its wall time.
 */
import { copyFileSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import pg from 'pg';
import { from as copyFrom, to as copyTo } from 'pg-copy-streams';
import { type BenchContext, cliEnv, TOKEN } from './bench-context.js';
import {
  type Connector,
  connectorLabel,
  runCli,
  type ServerChild,
  startReplayChild,
  startWideChild,
} from './child.js';
import { databaseCpuMs } from './database-cpu.js';
import { type CpuProfile, type ProfileSummary, summarizeProfile } from './profile-summary.js';
import { median } from './stats.js';
import type { WideStyle } from './wide-records.js';

const DAY = '2025-03-12';
const id = pg.escapeIdentifier;

/**
 * Which records a load measures: the simulator's (narrow), or wide ones (wide-records.ts): `wide` written as hostile
 * services write them, `wide-tame` the same records with only their keys' escapes (the wide workload before it was
 * made hostile), `wide-plain` those with no key written with an escape. The last two are for a diagnosis.
 */
export type Workload = 'narrow' | 'wide' | 'wide-tame' | 'wide-plain';

export const WORKLOADS: readonly Workload[] = ['narrow', 'wide', 'wide-tame', 'wide-plain'];
export const DEFAULT_WORKLOADS: readonly Workload[] = ['narrow', 'wide'];

const WIDE_STYLE_OF: Readonly<Record<Exclude<Workload, 'narrow'>, WideStyle>> = {
  wide: 'hostile',
  'wide-tame': 'escaped',
  'wide-plain': 'plain',
};

export interface LoadResult {
  readonly workload: Workload;
  /** The build and node binary the connector ran on. */
  readonly connector: Connector;
  readonly posts: number;
  readonly smallPosts: number;
  readonly connectorBigMs: number;
  readonly connectorSmallMs: number;
  readonly connectorMarginalMs: number;
  readonly floorFetchParseMs: number;
  readonly floorCopyMs: number;
  readonly floorMs: number;
  readonly ratio: number;
  readonly postsPerSecond: number;
  /** CPU time (user + system, every thread) of the connector child: medians of the big and small runs and of the
   * marginal per repetition. Null when a child did not report it. */
  readonly cpu: { readonly bigMs: number; readonly smallMs: number; readonly marginalMs: number } | null;
  /** The highest peak RSS of the connector's runs of the big window (MB); null when a child did not report it. */
  readonly peakRssMb: number | null;
  /**
   * CPU time of the PostgreSQL server (databaseCpuMs) while the connector ran, marginal as above, beside the floor's
   * COPY's: what the database does for the connector that it does not for the bare COPY. Null where it is not read.
   */
  readonly databaseCpu: { readonly marginalMs: number; readonly floorCopyMs: number } | null;
  /** The same with POST_REPORTS_HEAP_GROWTH_PERCENT=0 (V8's own heap growth): what the flat memory costs. */
  readonly v8GrowthMarginalMs?: number;
  readonly v8GrowthRatio?: number;
  /**
   * How the profiled run read its pages, as its log says: pages and values (fields other than null) in all, and those
   * read the full way (exact JSON) rather than in one pass. Undefined for a build that does not log it.
   */
  readonly paths?: PathCounts;
  /** The wide workload's pages as served: how many, their bytes, and how many hold a key written with an escape. */
  readonly pages?: { readonly pages: number; readonly bytes: number; readonly withEscapedKeys: number };
  readonly profile: ProfileSummary;
  readonly samples: Record<string, number[]>;
}

export interface PathCounts {
  readonly pages: number;
  readonly pagesTheFullWay: number;
  readonly values: number;
  readonly valuesTheFullWay: number;
}

/** The counts of the run's log line on how its pages were read (src/pipeline/run.ts), if it has one. */
class PathsFromLog {
  #pending = '';
  counts: PathCounts | undefined;

  readonly feed = (chunk: string): void => {
    const lines = (this.#pending + chunk).split('\n');
    this.#pending = lines.pop() ?? '';
    for (const line of lines) {
      if (!line.includes('"pagesTheFullWay"')) continue;
      try {
        const entry = JSON.parse(line) as Partial<PathCounts>;
        const { pages, pagesTheFullWay, values, valuesTheFullWay } = entry;
        if (
          typeof pages === 'number' &&
          typeof pagesTheFullWay === 'number' &&
          typeof values === 'number' &&
          typeof valuesTheFullWay === 'number'
        )
          this.counts = { pages, pagesTheFullWay, values, valuesTheFullWay };
      } catch {
        // Not a log line of JSON: no count.
      }
    }
  };
}

interface Run {
  readonly ms: number;
  readonly cpuMs: number | null;
  /**
   * Peak RSS (VmHWM, read from /proc while the child ran), in MB; null without /proc. Not getrusage's maxRSS, which
   * the process the CLI restarts into keeps from the bench that forked it.
   */
  readonly maxRssMb: number | null;
  /** The database server's CPU time meanwhile (databaseCpuMs); null where it is not read. */
  readonly dbCpuMs: number | null;
  readonly posts: number;
}

function cpuSince(before: number | null): number | null {
  const after = databaseCpuMs();
  return before === null || after === null ? null : after - before;
}

async function runConnector(
  context: BenchContext,
  connector: Connector,
  baseUrl: string,
  schema: string,
  nodeFlags: readonly string[] = [],
  env: Record<string, string> = {},
  onStderr?: (chunk: string) => void,
): Promise<Run> {
  const dbBefore = databaseCpuMs();
  const result = await runCli(
    connector,
    ['backfill', '--from', DAY, '--to', DAY, '--window-days', '1', '--concurrency', '1', '--schema', schema],
    cliEnv(context, baseUrl, env),
    nodeFlags,
    onStderr,
  );
  if (result.code !== 0)
    throw new Error(`connector run exited ${result.code}: ${result.stderr.slice(-2000)}`);
  return {
    ms: result.wallMs,
    cpuMs: result.cpuMs,
    maxRssMb: result.peakRssBytes === 0 ? null : result.peakRssBytes / 2 ** 20,
    dbCpuMs: cpuSince(dbBefore),
    posts: Number(result.summary?.posts ?? 0),
  };
}

async function dropSchema(context: BenchContext, schema: string): Promise<void> {
  await context.pool.query(`DROP SCHEMA IF EXISTS ${id(schema)} CASCADE`);
}

/** Fetches every page of the report the bare way: fetch, JSON.parse, follow next_page. */
async function fetchAndParse(baseUrl: string, reportId: string): Promise<number> {
  const started = performance.now();
  const url = new URL(`reports/posts/${encodeURIComponent(reportId)}`, `${baseUrl}/`);
  let rows = 0;
  for (;;) {
    const response = await fetch(url, { headers: { authorization: `Bearer ${TOKEN}` } });
    if (!response.ok) throw new Error(`floor fetch ${url} answered ${response.status}`);
    const body = JSON.parse(await response.text()) as {
      data: unknown[];
      response_metadata: { next_page: string | null }[];
    };
    rows += body.data.length;
    const next = body.response_metadata[0]?.next_page ?? null;
    if (next === null) break;
    url.searchParams.set('page', next);
  }
  if (rows === 0) throw new Error('floor fetch read no rows');
  return performance.now() - started;
}

async function copyOut(client: pg.PoolClient, sql: string): Promise<Buffer> {
  const chunks: Buffer[] = [];
  const stream = client.query(copyTo(sql));
  for await (const chunk of stream) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}

async function copyIn(client: pg.PoolClient, sql: string, data: Buffer): Promise<void> {
  await pipeline(Readable.from([data]), client.query(copyFrom(sql)));
}

interface FloorRows {
  readonly posts: Buffer;
  readonly segments: Buffer;
  readonly postIdColumn: string;
}

async function encodedRows(context: BenchContext, schema: string): Promise<FloorRows> {
  const client = await context.pool.connect();
  try {
    const posts = await copyOut(client, `COPY (SELECT * FROM ${id(schema)}.posts) TO STDOUT`);
    const segments = await copyOut(
      client,
      `COPY (SELECT * FROM ${id(schema)}.post_custom_segments) TO STDOUT`,
    );
    return { posts, segments, postIdColumn: 'platform_post_id' };
  } finally {
    client.release();
  }
}

/** A plain COPY of the already encoded rows into empty tables of the same columns and primary keys. */
async function floorCopy(
  context: BenchContext,
  source: string,
  rows: FloorRows,
): Promise<{ ms: number; dbCpuMs: number | null }> {
  const floor = 'bench_floor';
  const pk = id(rows.postIdColumn);
  await dropSchema(context, floor);
  await context.pool.query(`CREATE SCHEMA ${id(floor)}`);
  await context.pool.query(`CREATE TABLE ${id(floor)}.posts (LIKE ${id(source)}.posts)`);
  await context.pool.query(`ALTER TABLE ${id(floor)}.posts ADD PRIMARY KEY (${pk}, _window_start)`);
  await context.pool.query(`CREATE TABLE ${id(floor)}.segments (LIKE ${id(source)}.post_custom_segments)`);
  await context.pool.query(
    `ALTER TABLE ${id(floor)}.segments ADD PRIMARY KEY (${pk}, _window_start, name, value)`,
  );
  const client = await context.pool.connect();
  try {
    const dbBefore = databaseCpuMs();
    const started = performance.now();
    await client.query('BEGIN');
    await copyIn(client, `COPY ${id(floor)}.posts FROM STDIN`, rows.posts);
    await copyIn(client, `COPY ${id(floor)}.segments FROM STDIN`, rows.segments);
    await client.query('COMMIT');
    return { ms: performance.now() - started, dbCpuMs: cpuSince(dbBefore) };
  } finally {
    client.release();
    await dropSchema(context, floor);
  }
}

/** One run under node --cpu-prof into `schema` (dropped after unless `keep`), summarized. */
async function profileRun(
  context: BenchContext,
  connector: Connector,
  workload: Workload,
  baseUrl: string,
  schema: string,
  keep = false,
): Promise<{ run: Run; profile: ProfileSummary; paths: PathCounts | undefined }> {
  const dir = mkdtempSync(join(tmpdir(), 'bench-profile-'));
  const paths = new PathsFromLog();
  try {
    const run = await runConnector(
      context,
      connector,
      baseUrl,
      schema,
      ['--cpu-prof', `--cpu-prof-dir=${dir}`],
      // The count of the pages each way took is logged at info, once a run.
      { LOG_LEVEL: 'info' },
      paths.feed,
    );
    // The CLI restarts itself in place (process.execve): the process it replaced writes a profile of its start-up
    // alone, the one it became the profile of the load, the largest.
    const file = readdirSync(dir)
      .filter((f) => f.endsWith('.cpuprofile'))
      .map((f) => ({ f, size: statSync(join(dir, f)).size }))
      .sort((a, b) => b.size - a.size)[0]?.f;
    if (file === undefined) throw new Error('node --cpu-prof wrote no profile');
    if (context.profileDir !== undefined) {
      mkdirSync(context.profileDir, { recursive: true });
      const name = `${workload}-node${connector.nodeVersion}-${connector.build || 'build'}.cpuprofile`;
      copyFileSync(join(dir, file), join(context.profileDir, name));
    }
    return {
      run,
      profile: summarizeProfile(JSON.parse(readFileSync(join(dir, file), 'utf8')) as CpuProfile),
      paths: paths.counts,
    };
  } finally {
    rmSync(dir, { recursive: true, force: true });
    if (!keep) await dropSchema(context, schema);
  }
}

interface Servers {
  readonly big: ServerChild;
  readonly small: ServerChild;
}

function sizes(context: BenchContext, workload: Workload): { big: number; small: number } {
  if (workload === 'narrow')
    return context.smoke ? { big: 5_000, small: 200 } : { big: 200_000, small: 1_000 };
  return context.smoke ? { big: 1_500, small: 100 } : { big: 200_000, small: 1_000 };
}

async function startServers(context: BenchContext, workload: Workload): Promise<Servers> {
  const { big, small } = sizes(context, workload);
  if (workload === 'narrow')
    return { big: await startReplayChild(big), small: await startReplayChild(small) };
  const style = WIDE_STYLE_OF[workload];
  return {
    big: await startWideChild({ posts: big, seed: WIDE_SEED, style }),
    small: await startWideChild({ posts: small, seed: WIDE_SEED, style }),
  };
}

const WIDE_SEED = 1;

/** The connectors in the order of repetition `rep`: rotated, so that none is always first after the floor. */
function rotated<T>(items: readonly T[], rep: number): T[] {
  return items.map((_, i) => items[(i + rep) % items.length]!);
}

function cpuSummary(big: readonly (number | null)[], small: readonly (number | null)[]): LoadResult['cpu'] {
  if (big.some((v) => v === null) || small.some((v) => v === null)) return null;
  const b = big as number[];
  const s = small as number[];
  return { bigMs: median(b), smallMs: median(s), marginalMs: median(b.map((v, i) => v - s[i]!)) };
}

function databaseCpuSummary(
  big: readonly (number | null)[],
  small: readonly (number | null)[],
  floor: readonly (number | null)[],
): LoadResult['databaseCpu'] {
  const marginal = cpuSummary(big, small);
  if (marginal === null || floor.some((v) => v === null)) return null;
  return { marginalMs: marginal.marginalMs, floorCopyMs: median(floor as number[]) };
}

/**
 * One workload for every connector: each warmed once (the replay proxy caches what each build asks for), then
 * per repetition every connector in turn (rotated) and the floor, so that a drift in whatever else runs meanwhile
 * falls on every build and node version alike; then a CPU profile of each (for the wide workload, taken by the
 * warm-up run).
 */
async function benchWorkload(context: BenchContext, workload: Workload): Promise<LoadResult[]> {
  const { big: bigSize, small: smallSize } = sizes(context, workload);
  const { big, small } = await startServers(context, workload);
  const connectorsRun = context.connectors;
  const narrow = workload === 'narrow';
  try {
    context.log(`load ${workload}: warming up each connector (${bigSize} and ${smallSize} posts)`);
    const warm = 'bench_warm';
    let warmBig: Run | undefined;
    const profiles: ProfileSummary[] = [];
    const pathCounts: (PathCounts | undefined)[] = [];
    for (const [i, connector] of connectorsRun.entries()) {
      const schema = i === 0 ? warm : 'bench_warm_other';
      let run: Run;
      if (narrow) {
        run = await runConnector(context, connector, big.baseUrl, schema);
      } else {
        // The wide server needs no warming: each connector's first run is its profile run, a long one spared.
        context.log(`load ${workload}: CPU profile run, ${connectorLabel(connector)}`);
        const profiled = await profileRun(context, connector, workload, big.baseUrl, schema, true);
        run = profiled.run;
        profiles.push(profiled.profile);
        pathCounts.push(profiled.paths);
      }
      if (i === 0) warmBig = run;
      else await dropSchema(context, schema);
      if (run.posts !== bigSize)
        throw new Error(`${connectorLabel(connector)} loaded ${run.posts} posts, not ${bigSize}`);
      // The replay proxy must have seen what each build asks of the small report too.
      if (narrow) {
        await runConnector(context, connector, small.baseUrl, 'bench_warm_small');
        await dropSchema(context, 'bench_warm_small');
      }
    }
    const found = await context.pool.query<{ report_id: string }>(
      `SELECT DISTINCT _report_id AS report_id FROM ${id(warm)}.posts`,
    );
    const reportId = found.rows[0]?.report_id;
    if (reportId === undefined) throw new Error('the warm-up loaded nothing');
    const rows = await encodedRows(context, warm);
    const samples = connectorsRun.map(() => ({
      big: [] as number[],
      bigV8: [] as number[],
      small: [] as number[],
      bigCpu: [] as (number | null)[],
      smallCpu: [] as (number | null)[],
      bigRss: [] as (number | null)[],
      bigDb: [] as (number | null)[],
      smallDb: [] as (number | null)[],
    }));
    const floorSamples = {
      fetchParse: [] as number[],
      copy: [] as number[],
      copyDb: [] as (number | null)[],
    };
    for (let rep = 0; rep < context.repetitions; rep++) {
      const schema = `bench_load_${rep}`;
      for (const i of rotated([...connectorsRun.keys()], rep)) {
        const connector = connectorsRun[i]!;
        const own = samples[i]!;
        const b = await runConnector(context, connector, big.baseUrl, schema);
        await dropSchema(context, schema);
        let v: Run | undefined;
        if (narrow) {
          v = await runConnector(context, connector, big.baseUrl, schema, [], {
            POST_REPORTS_HEAP_GROWTH_PERCENT: '0',
          });
          await dropSchema(context, schema);
          own.bigV8.push(v.ms);
        }
        const s = await runConnector(context, connector, small.baseUrl, schema);
        await dropSchema(context, schema);
        own.big.push(b.ms);
        own.small.push(s.ms);
        own.bigCpu.push(b.cpuMs);
        own.bigRss.push(b.maxRssMb);
        own.smallCpu.push(s.cpuMs);
        own.bigDb.push(b.dbCpuMs);
        own.smallDb.push(s.dbCpuMs);
        const cpu = (r: Run) =>
          (r.cpuMs === null ? '' : `, CPU ${Math.round(r.cpuMs)} ms`) +
          (r.dbCpuMs === null ? '' : `, database CPU ${Math.round(r.dbCpuMs)} ms`);
        context.log(
          `load ${workload} rep ${rep + 1} ${connectorLabel(connector)}: connector ${Math.round(b.ms)} ms${cpu(b)} (${b.posts} posts${v ? `; ${Math.round(v.ms)} ms with V8's heap growth` : ''}) / ${Math.round(s.ms)} ms${cpu(s)} (${s.posts})`,
        );
      }
      const fp = await fetchAndParse(big.baseUrl, reportId);
      const { ms: cp, dbCpuMs: cpDb } = await floorCopy(context, warm, rows);
      floorSamples.fetchParse.push(fp);
      floorSamples.copy.push(cp);
      floorSamples.copyDb.push(cpDb);
      context.log(
        `load ${workload} rep ${rep + 1}: floor fetch+parse ${Math.round(fp)} ms + COPY ${Math.round(cp)} ms${cpDb === null ? '' : ` (database CPU ${Math.round(cpDb)} ms)`}`,
      );
    }
    if (narrow) {
      for (const connector of connectorsRun) {
        context.log(`load ${workload}: CPU profile run, ${connectorLabel(connector)}`);
        const profiled = await profileRun(context, connector, workload, big.baseUrl, 'bench_profile');
        profiles.push(profiled.profile);
        pathCounts.push(profiled.paths);
      }
    }
    await dropSchema(context, warm);
    const floors = floorSamples.fetchParse.map((f, i) => f + floorSamples.copy[i]!);
    const floorMs = median(floors);
    const pages = narrow
      ? undefined
      : {
          pages: Number(big.ready.pages),
          bytes: Number(big.ready.bytes),
          withEscapedKeys: Number(big.ready.pagesWithEscapedKeys),
        };
    return connectorsRun.map((connector, i) => {
      const own = samples[i]!;
      // Marginal per repetition, then the median, so that a noisy repetition does not mix into another.
      const marginal = own.big.map((b, r) => b - own.small[r]!);
      const connectorMarginalMs = median(marginal);
      const marginalV8 = own.bigV8.map((b, r) => b - own.small[r]!);
      return {
        workload,
        connector,
        posts: warmBig!.posts,
        smallPosts: smallSize,
        connectorBigMs: median(own.big),
        connectorSmallMs: median(own.small),
        connectorMarginalMs,
        floorFetchParseMs: median(floorSamples.fetchParse),
        floorCopyMs: median(floorSamples.copy),
        floorMs,
        ratio: median(marginal.map((m, r) => m / floors[r]!)),
        postsPerSecond: (warmBig!.posts - smallSize) / (connectorMarginalMs / 1000),
        cpu: cpuSummary(own.bigCpu, own.smallCpu),
        peakRssMb: own.bigRss.some((r) => r === null) ? null : Math.max(...(own.bigRss as number[])),
        databaseCpu: databaseCpuSummary(own.bigDb, own.smallDb, floorSamples.copyDb),
        ...(narrow
          ? {
              v8GrowthMarginalMs: median(marginalV8),
              v8GrowthRatio: median(marginalV8.map((m, r) => m / floors[r]!)),
            }
          : {}),
        ...(pages ? { pages } : {}),
        ...(pathCounts[i] ? { paths: pathCounts[i] } : {}),
        profile: profiles[i]!,
        samples: {
          big: own.big,
          ...(narrow ? { bigV8: own.bigV8 } : {}),
          small: own.small,
          ...(cpuSummary(own.bigCpu, own.smallCpu)
            ? { bigCpu: own.bigCpu as number[], smallCpu: own.smallCpu as number[] }
            : {}),
          fetchParse: floorSamples.fetchParse,
          copy: floorSamples.copy,
        },
      };
    });
  } finally {
    await big.stop();
    await small.stop();
  }
}

/** Figure 1 for each workload asked for, each measured for every connector. */
export async function benchLoadThroughput(
  context: BenchContext,
  workloads: readonly Workload[] = DEFAULT_WORKLOADS,
): Promise<LoadResult[]> {
  const out: LoadResult[] = [];
  for (const workload of workloads) out.push(...(await benchWorkload(context, workload)));
  return out;
}
