/*
 * Figure 1: the connector's marginal time for a big window against the floor of the same work done the bare way.
 * Both read the same page bodies from a caching replay proxy (replay-server.ts), warmed once beforehand.
 */
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import pg from 'pg';
import { from as copyFrom, to as copyTo } from 'pg-copy-streams';
import { type BenchContext, cliEnv, TOKEN } from './bench-context.js';
import { CLI, runNode, startReplayChild } from './child.js';
import { type CpuProfile, type ProfileSummary, summarizeProfile } from './profile-summary.js';
import { median } from './stats.js';

const DAY = '2025-03-12';
const id = pg.escapeIdentifier;

export interface LoadResult {
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
  /** The same with POST_REPORTS_HEAP_GROWTH_PERCENT=0 (V8's own heap growth): what the flat memory costs. */
  readonly v8GrowthMarginalMs: number;
  readonly v8GrowthRatio: number;
  readonly profile: ProfileSummary;
  readonly samples: Record<string, number[]>;
}

async function runConnector(
  context: BenchContext,
  baseUrl: string,
  schema: string,
  nodeFlags: readonly string[] = [],
  env: Record<string, string> = {},
): Promise<{ ms: number; posts: number }> {
  const result = await runNode(
    [
      CLI,
      'backfill',
      '--from',
      DAY,
      '--to',
      DAY,
      '--window-days',
      '1',
      '--concurrency',
      '1',
      '--schema',
      schema,
    ],
    cliEnv(context, baseUrl, env),
    nodeFlags,
  );
  if (result.code !== 0)
    throw new Error(`connector run exited ${result.code}: ${result.stderr.slice(-2000)}`);
  return { ms: result.wallMs, posts: Number(result.summary?.posts ?? 0) };
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
async function floorCopy(context: BenchContext, source: string, rows: FloorRows): Promise<number> {
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
    const started = performance.now();
    await client.query('BEGIN');
    await copyIn(client, `COPY ${id(floor)}.posts FROM STDIN`, rows.posts);
    await copyIn(client, `COPY ${id(floor)}.segments FROM STDIN`, rows.segments);
    await client.query('COMMIT');
    return performance.now() - started;
  } finally {
    client.release();
    await dropSchema(context, floor);
  }
}

async function profileRun(context: BenchContext, baseUrl: string): Promise<ProfileSummary> {
  const dir = mkdtempSync(join(tmpdir(), 'bench-profile-'));
  try {
    await runConnector(context, baseUrl, 'bench_profile', ['--cpu-prof', `--cpu-prof-dir=${dir}`]);
    const file = readdirSync(dir).find((f) => f.endsWith('.cpuprofile'));
    if (file === undefined) throw new Error('node --cpu-prof wrote no profile');
    return summarizeProfile(JSON.parse(readFileSync(join(dir, file), 'utf8')) as CpuProfile);
  } finally {
    rmSync(dir, { recursive: true, force: true });
    await dropSchema(context, 'bench_profile');
  }
}

export async function benchLoadThroughput(context: BenchContext): Promise<LoadResult> {
  const bigSize = context.smoke ? 5_000 : 200_000;
  const smallSize = context.smoke ? 200 : 1_000;
  const big = await startReplayChild(bigSize);
  const small = await startReplayChild(smallSize);
  try {
    context.log(`load: warming the replay caches (${bigSize} and ${smallSize} posts)`);
    const warm = 'bench_warm';
    const warmBig = await runConnector(context, big.baseUrl, warm);
    await runConnector(context, small.baseUrl, 'bench_warm_small');
    await dropSchema(context, 'bench_warm_small');
    const found = await context.pool.query<{ report_id: string }>(
      `SELECT DISTINCT _report_id AS report_id FROM ${id(warm)}.posts`,
    );
    const reportId = found.rows[0]?.report_id;
    if (reportId === undefined) throw new Error('the warm-up loaded nothing');
    const rows = await encodedRows(context, warm);
    const samples: Record<string, number[]> = { big: [], bigV8: [], small: [], fetchParse: [], copy: [] };
    for (let rep = 0; rep < context.repetitions; rep++) {
      const schema = `bench_load_${rep}`;
      const b = await runConnector(context, big.baseUrl, schema);
      await dropSchema(context, schema);
      const v = await runConnector(context, big.baseUrl, schema, [], {
        POST_REPORTS_HEAP_GROWTH_PERCENT: '0',
      });
      await dropSchema(context, schema);
      const s = await runConnector(context, small.baseUrl, schema);
      await dropSchema(context, schema);
      const fp = await fetchAndParse(big.baseUrl, reportId);
      const cp = await floorCopy(context, warm, rows);
      samples.big!.push(b.ms);
      samples.bigV8!.push(v.ms);
      samples.small!.push(s.ms);
      samples.fetchParse!.push(fp);
      samples.copy!.push(cp);
      context.log(
        `load rep ${rep + 1}: connector ${Math.round(b.ms)} ms (${b.posts} posts; ${Math.round(v.ms)} ms with V8's heap growth) / ${Math.round(s.ms)} ms (${s.posts}); floor fetch+parse ${Math.round(fp)} ms + COPY ${Math.round(cp)} ms`,
      );
    }
    context.log('load: CPU profile run');
    const profile = await profileRun(context, big.baseUrl);
    await dropSchema(context, warm);
    // Marginal per repetition, then the median, so that a noisy repetition does not mix into another.
    const marginal = samples.big!.map((b, i) => b - samples.small![i]!);
    const floors = samples.fetchParse!.map((f, i) => f + samples.copy![i]!);
    const marginalV8 = samples.bigV8!.map((b, i) => b - samples.small![i]!);
    const connectorMarginalMs = median(marginal);
    const floorMs = median(floors);
    return {
      posts: warmBig.posts,
      smallPosts: smallSize,
      connectorBigMs: median(samples.big!),
      connectorSmallMs: median(samples.small!),
      connectorMarginalMs,
      floorFetchParseMs: median(samples.fetchParse!),
      floorCopyMs: median(samples.copy!),
      floorMs,
      ratio: median(marginal.map((m, i) => m / floors[i]!)),
      postsPerSecond: (warmBig.posts - smallSize) / (connectorMarginalMs / 1000),
      v8GrowthMarginalMs: median(marginalV8),
      v8GrowthRatio: median(marginalV8.map((m, i) => m / floors[i]!)),
      profile,
      samples,
    };
  } finally {
    await big.stop();
    await small.stop();
  }
}
