/*
 * Figure 4: what the storage layout costs its writer and its readers over a long history. Three years of 1-day
 * windows are loaded through the CLI; the commits at the end of the history must not be much slower than those
 * at its start. Then the readers' queries and the size on disk are compared against plain (non-partitioned)
 * copies of the same rows with the same keys, built in the same database: what a layout costs is measured
 * against the simplest table a reader could have, whatever that layout is.
 */
import pg from 'pg';
import { migrate } from '../src/load/migrate.js';
import { createLogger } from '../src/logger.js';
import { cutWindows } from '../src/pipeline/windows.js';
import { type BenchContext, cliEnv } from './bench-context.js';
import { runCli, startSimulatorChild } from './child.js';
import { median } from './stats.js';

const id = pg.escapeIdentifier;
const SCHEMA = 'bench_readers';
const POSTS = 'posts';
const SEGMENTS = 'post_custom_segments';
/** The views of each post's latest row (migration 012), measured against the README's query on the same tables. */
const POSTS_LATEST = 'posts_latest';
const SEGMENTS_LATEST = 'post_custom_segments_latest';
/** The schema of the dense history, made by the bench's own build (migrations included), rows written by SQL. */
const DENSE_SCHEMA = 'bench_latest';
const PLAIN_POSTS = 'plain_posts';
const PLAIN_SEGMENTS = 'plain_segments';
const POST_ID = 'platform_post_id';

export interface ReadersOptions {
  /** The backfill's first and last dates, loaded as 1-day windows. */
  readonly from: string;
  readonly to: string;
  readonly postsPerDay: number;
  readonly concurrency: number;
  /** How many commits at each end of the log are compared (fewer when the run has not twice as many). */
  readonly commitSample: number;
  /** Executions of each light query (one post, one join) and of each heavy one (whole-table scans). */
  readonly lightExecutions: number;
  readonly heavyExecutions: number;
  /** Executions of each query, per table, before the timed ones: caches and catalogs warm. */
  readonly warmUp: number;
  /**
   * The time the timed executions of one query may take on both sides together, once `minExecutions` ran: a
   * layout that plans a thousand partitions per query must not keep the bench busy for many minutes.
   */
  readonly queryBudgetMs: number;
  readonly minExecutions: number;
  /**
   * The dense history the latest views are also measured on: days of windows, new posts a day, and the windows each
   * post is reported in (the loaded history has each post in one window only, where DISTINCT ON has nothing to drop).
   */
  readonly dense: { readonly days: number; readonly postsPerDay: number; readonly windowsPerPost: number };
}

/** Three years (1,096 days) at full size; 60 days under --smoke, so that CI keeps the figure working. */
export function readersOptions(smoke: boolean): ReadersOptions {
  return {
    from: smoke ? '2025-01-01' : '2023-01-01',
    to: smoke ? '2025-03-01' : '2025-12-31',
    postsPerDay: 3,
    concurrency: 4,
    commitSample: 100,
    lightExecutions: smoke ? 20 : 200,
    heavyExecutions: smoke ? 5 : 50,
    warmUp: smoke ? 2 : 5,
    queryBudgetMs: smoke ? 10_000 : 30_000,
    minExecutions: smoke ? 3 : 11,
    dense: { days: smoke ? 60 : 1096, postsPerDay: 100, windowsPerPost: 7 },
  };
}

export interface ReaderQueryResult {
  readonly query: string;
  /** Timed executions on each side (fewer than asked when the query's time budget ran out). */
  readonly executions: number;
  readonly connectorMs: number;
  readonly plainMs: number;
  readonly ratio: number;
}

/** A read of each post's latest row: through the view, and by the README's DISTINCT ON query on the same tables. */
export interface LatestQueryResult {
  /** The history read: the loaded one, or the dense one (every post in several windows). */
  readonly history: string;
  readonly query: string;
  readonly executions: number;
  readonly viewMs: number;
  readonly readmeMs: number;
  /** viewMs / readmeMs. */
  readonly ratio: number;
}

export interface ReadersResult {
  readonly from: string;
  readonly to: string;
  readonly windows: number;
  readonly postsPerDay: number;
  readonly concurrency: number;
  readonly posts: number;
  readonly segments: number;
  readonly backfillMs: number;
  /** Commits in the log, and how many at each end were compared. */
  readonly commits: number;
  readonly commitSample: number;
  readonly firstCommitsMs: number;
  readonly lastCommitsMs: number;
  readonly commitRatio: number;
  readonly queries: readonly ReaderQueryResult[];
  /** The latest views against the README's query (absent when the schema has no such views). */
  readonly latest: readonly LatestQueryResult[];
  /** Tables in the partition trees of the connector's posts and segments, the parents included. */
  readonly connectorRelations: number;
  readonly connectorBytes: number;
  readonly plainBytes: number;
  readonly sizeRatio: number;
}

/**
 * Drops the schema, its partitions first a hundred at a time: a DROP SCHEMA … CASCADE of a layout with a
 * partition per window locks every table, index and TOAST table in one transaction, more than the server's
 * lock table holds (max_locks_per_transaction), and fails with "out of shared memory".
 */
async function dropSchema(pool: pg.Pool): Promise<void> {
  const partitions = await pool.query<{ name: string }>(
    `SELECT oid::regclass::text AS name FROM pg_class
      WHERE relnamespace = to_regnamespace($1) AND relispartition AND relkind IN ('r', 'p')`,
    [SCHEMA],
  );
  const names = partitions.rows.map((r) => r.name);
  for (let i = 0; i < names.length; i += 100) {
    await pool.query(`DROP TABLE IF EXISTS ${names.slice(i, i + 100).join(', ')}`);
  }
  await pool.query(`DROP SCHEMA IF EXISTS ${id(SCHEMA)} CASCADE`);
}

/** The commitMs of every 'windows committed' line of a pino JSON log, in log order. */
function commitTimes(log: string): number[] {
  const out: number[] = [];
  for (const line of log.split('\n')) {
    if (!line.startsWith('{')) continue;
    let entry: { msg?: unknown; commitMs?: unknown };
    try {
      entry = JSON.parse(line) as { msg?: unknown; commitMs?: unknown };
    } catch {
      continue;
    }
    if (entry.msg === 'windows committed' && typeof entry.commitMs === 'number') out.push(entry.commitMs);
  }
  return out;
}

async function backfill(
  context: BenchContext,
  options: ReadersOptions,
): Promise<{ wallMs: number; commits: number[] }> {
  const sim = await startSimulatorChild({ postsPerDay: options.postsPerDay });
  let log = '';
  try {
    const result = await runCli(
      context.connector,
      [
        'backfill',
        '--from',
        options.from,
        '--to',
        options.to,
        '--window-days',
        '1',
        '--concurrency',
        String(options.concurrency),
        '--schema',
        SCHEMA,
      ],
      // The commit lines are logged at info.
      cliEnv(context, sim.baseUrl, { LOG_LEVEL: 'info' }),
      [],
      (chunk) => {
        log += chunk;
      },
    );
    if (result.code !== 0) throw new Error(`backfill exited ${result.code}: ${result.stderr.slice(-2000)}`);
    return { wallMs: result.wallMs, commits: commitTimes(log) };
  } finally {
    await sim.stop();
  }
}

/** The plain copy's name for an index or constraint of `parent`: its table's name swapped, or a prefix. */
function copyName(name: string, parent: string, copy: string): string {
  return name.startsWith(parent) ? `${copy}${name.slice(parent.length)}` : `${copy}_${name}`;
}

/**
 * A non-partitioned copy of `parent` with its rows and every index the parent has, read from the catalog so
 * that the copy follows the layout: constraints (the primary key) as constraints, other indexes as indexes.
 */
async function plainCopy(context: BenchContext, parent: string, copy: string): Promise<void> {
  const { pool } = context;
  const source = `${id(SCHEMA)}.${id(parent)}`;
  const target = `${id(SCHEMA)}.${id(copy)}`;
  await pool.query(`CREATE TABLE ${target} (LIKE ${source} INCLUDING DEFAULTS)`);
  await pool.query(`INSERT INTO ${target} SELECT * FROM ${source}`);
  const indexes = await pool.query<{ name: string; definition: string; constraint_def: string | null }>(
    `SELECT c.relname AS name, pg_get_indexdef(i.indexrelid) AS definition,
            pg_get_constraintdef(k.oid) AS constraint_def
       FROM pg_index i
       JOIN pg_class c ON c.oid = i.indexrelid
       LEFT JOIN pg_constraint k ON k.conindid = i.indexrelid AND k.conrelid = i.indrelid
      WHERE i.indrelid = $1::regclass
      ORDER BY i.indisprimary DESC, c.relname`,
    [source],
  );
  for (const index of indexes.rows) {
    const name = id(copyName(index.name, parent, copy));
    let sql: string;
    if (index.constraint_def !== null) {
      sql = `ALTER TABLE ${target} ADD CONSTRAINT ${name} ${index.constraint_def}`;
    } else {
      // "CREATE [UNIQUE] INDEX name ON [ONLY] schema.table USING …": from USING on is the index itself.
      const using = /\sUSING\s[\s\S]*$/.exec(index.definition);
      if (using === null) throw new Error(`cannot read the index definition ${index.definition}`);
      const unique = index.definition.startsWith('CREATE UNIQUE INDEX') ? 'UNIQUE ' : '';
      sql = `CREATE ${unique}INDEX ${name} ON ${target}${using[0]}`;
    }
    // Logged, so that a reader of the figures can see the copy has the keys the layout has.
    context.log(`readers: ${sql}`);
    await pool.query(sql);
  }
}

async function hasColumn(pool: pg.Pool, table: string, column: string): Promise<boolean> {
  const found = await pool.query(
    'SELECT 1 FROM pg_attribute WHERE attrelid = $1::regclass AND attname = $2 AND NOT attisdropped',
    [`${id(SCHEMA)}.${id(table)}`, column],
  );
  return found.rowCount === 1;
}

/**
 * pg_total_relation_size over the partition trees of `tables`: every partition and the parents (pg_partition_tree
 * answers nothing for a table that is not partitioned, hence the roots added on their own).
 */
async function treeSize(
  pool: pg.Pool,
  tables: readonly string[],
): Promise<{ bytes: number; relations: number }> {
  const found = await pool.query<{ bytes: string; relations: string }>(
    `SELECT sum(pg_total_relation_size(relid)) AS bytes, count(*) AS relations
       FROM (SELECT root AS relid FROM unnest($1::regclass[]) AS root
             UNION
             SELECT tree.relid FROM unnest($1::regclass[]) AS root, pg_partition_tree(root) AS tree) AS relations`,
    [tables.map((t) => `${id(SCHEMA)}.${id(t)}`)],
  );
  const row = found.rows[0]!;
  return { bytes: Number(row.bytes), relations: Number(row.relations) };
}

interface Tables {
  readonly posts: string;
  readonly segments: string;
}

interface ReaderQuery {
  readonly query: string;
  readonly executions: number;
  readonly sql: (tables: Tables) => string;
  /** The parameters of execution `i`. */
  readonly params: (i: number) => string[];
}

function readerQueries(options: ReadersOptions, ids: readonly string[], joinColumns: string): ReaderQuery[] {
  // A prime stride walks the ids in a fixed order spread over the whole history (every id, unless the count is
  // a multiple of it), the same ids for both tables, so that neither side is favoured by what is cached.
  const stride = 7919;
  const postId = (i: number): string[] => [ids[(i * stride) % ids.length]!];
  const none = (): string[] => [];
  return [
    {
      query: 'one post by id',
      executions: options.lightExecutions,
      sql: (t) => `SELECT * FROM ${t.posts} WHERE ${id(POST_ID)} = $1`,
      params: postId,
    },
    {
      query: 'one post joined to its segments',
      executions: options.lightExecutions,
      sql: (t) =>
        `SELECT * FROM ${t.posts} p JOIN ${t.segments} s USING (${joinColumns}) WHERE p.${id(POST_ID)} = $1`,
      params: postId,
    },
    {
      query: 'count(*) of posts',
      executions: options.heavyExecutions,
      sql: (t) => `SELECT count(*) FROM ${t.posts}`,
      params: none,
    },
    {
      query: 'posts a month',
      executions: options.heavyExecutions,
      sql: (t) =>
        `SELECT date_trunc('month', _window_start) AS month, count(*) FROM ${t.posts} GROUP BY 1 ORDER BY 1`,
      params: none,
    },
  ];
}

/**
 * Reads of each post's latest row. The two sides are the connector's views (`tables` names them) and the README's
 * query written over posts as a person would write it for the read (a filter on the post id inside it).
 */
interface LatestSide {
  readonly posts: (where: string) => string;
  readonly segments: (where: string) => string;
}

function latestQueries(
  options: ReadersOptions,
  ids: readonly string[],
): {
  query: string;
  executions: number;
  sql: (side: LatestSide) => string;
  params: (i: number) => string[];
}[] {
  const stride = 7919;
  const postId = (i: number): string[] => [ids[(i * stride) % ids.length]!];
  const none = (): string[] => [];
  const byId = `${id(POST_ID)} = $1`;
  return [
    {
      query: "one post's latest row",
      executions: options.lightExecutions,
      sql: (t) => t.posts(byId),
      params: postId,
    },
    {
      query: "one post's latest segments",
      executions: options.lightExecutions,
      sql: (t) => t.segments(byId),
      params: postId,
    },
    {
      query: 'the latest row of every post',
      executions: options.heavyExecutions,
      sql: (t) => `SELECT count(*), sum(length(brand)) FROM (${t.posts('true')}) l`,
      params: none,
    },
    {
      query: 'posts per segment value, latest rows',
      executions: options.heavyExecutions,
      sql: (t) => `SELECT name, value, count(*) FROM (${t.segments('true')}) l GROUP BY name, value`,
      params: none,
    },
  ];
}

/** One execution as an application pays it: parse, plan and run of an unnamed statement, and the round trip. */
async function timed(
  client: pg.PoolClient,
  text: string,
  params: string[],
): Promise<{ ms: number; rows: number }> {
  const started = performance.now();
  const result = await client.query(text, params);
  return { ms: performance.now() - started, rows: result.rowCount ?? 0 };
}

/**
 * Times `query` against both sets of tables, interleaved execution by execution and alternating which goes
 * first, so that a drift of the machine falls on both alike. The warm-up also checks that both sides answer
 * the same number of rows: a comparison of different work would mean nothing.
 */
async function compare(
  client: pg.PoolClient,
  options: ReadersOptions,
  query: Omit<ReaderQuery, 'sql'>,
  connectorSql: string,
  plainSql: string,
): Promise<ReaderQueryResult> {
  for (let i = 0; i < options.warmUp; i++) {
    const a = await timed(client, connectorSql, query.params(i));
    const b = await timed(client, plainSql, query.params(i));
    if (a.rows !== b.rows)
      throw new Error(
        `${query.query}: ${a.rows} rows from the connector's tables, ${b.rows} from the copies`,
      );
  }
  const samples = { connector: [] as number[], plain: [] as number[] };
  const started = performance.now();
  const inBudget = (i: number): boolean =>
    i < options.minExecutions || performance.now() - started < options.queryBudgetMs;
  for (let i = 0; i < query.executions && inBudget(i); i++) {
    const params = query.params(options.warmUp + i);
    if (i % 2 === 0) {
      samples.connector.push((await timed(client, connectorSql, params)).ms);
      samples.plain.push((await timed(client, plainSql, params)).ms);
    } else {
      samples.plain.push((await timed(client, plainSql, params)).ms);
      samples.connector.push((await timed(client, connectorSql, params)).ms);
    }
  }
  const connectorMs = median(samples.connector);
  const plainMs = median(samples.plain);
  return {
    query: query.query,
    executions: samples.connector.length,
    connectorMs,
    plainMs,
    ratio: connectorMs / plainMs,
  };
}

/**
 * The latest views against the README's query on the same tables of `schema`, compared as the readers' queries are
 * (the view's side in `connector`, the README's in `plain`). None when the schema has no such views (a connector
 * measured that makes none).
 */
async function measureLatest(
  context: BenchContext,
  options: ReadersOptions,
  client: pg.PoolClient,
  history: { readonly schema: string; readonly label: string; readonly ids: readonly string[] },
): Promise<LatestQueryResult[]> {
  const { schema, label, ids } = history;
  const table = (name: string): string => `${id(schema)}.${id(name)}`;
  const exists = await client.query<{ found: boolean }>(
    'SELECT to_regclass($1) IS NOT NULL AND to_regclass($2) IS NOT NULL AS found',
    [table(POSTS_LATEST), table(SEGMENTS_LATEST)],
  );
  if (exists.rows[0]?.found !== true) return [];
  const key = `_org, ${id(POST_ID)}`;
  const readme = (where: string): string =>
    `SELECT DISTINCT ON (${key}) * FROM ${table(POSTS)} WHERE ${where} ORDER BY ${key}, _window_start DESC`;
  const view: LatestSide = {
    posts: (where) => `SELECT * FROM ${table(POSTS_LATEST)} WHERE ${where}`,
    segments: (where) => `SELECT * FROM ${table(SEGMENTS_LATEST)} WHERE ${where}`,
  };
  const query: LatestSide = {
    posts: readme,
    segments: (where) =>
      `SELECT s.* FROM ${table(SEGMENTS)} s JOIN (${readme(where)}) l USING (${key}, _window_start)`,
  };
  const out: LatestQueryResult[] = [];
  for (const latest of latestQueries(options, ids)) {
    // The view's side as the connector's, the README's query as the plain one.
    const result = await compare(client, options, latest, latest.sql(view), latest.sql(query));
    context.log(
      `readers: ${label}: ${latest.query}: view ${result.connectorMs.toFixed(2)} ms, README's query ${result.plainMs.toFixed(2)} ms (median of ${result.executions})`,
    );
    out.push({
      history: label,
      query: latest.query,
      executions: result.executions,
      viewMs: result.connectorMs,
      readmeMs: result.plainMs,
      ratio: result.ratio,
    });
  }
  return out;
}

/**
 * A dense history for the latest views: `days` daily windows from 2023-01-01, `postsPerDay` new posts a day, each
 * reported in `windowsPerPost` consecutive windows (one segment a row), in year partitions as the connector makes
 * them. Made by migrate (so its views are the bench's build's), its rows written by SQL: what is measured is the
 * reading, not the loading. Returns the post ids.
 */
async function denseHistory(context: BenchContext, options: ReadersOptions): Promise<string[]> {
  const { pool } = context;
  const { days, postsPerDay, windowsPerPost } = options.dense;
  const s = id(DENSE_SCHEMA);
  await pool.query(`DROP SCHEMA IF EXISTS ${s} CASCADE`);
  await migrate(pool, { schema: DENSE_SCHEMA, postIdField: POST_ID }, createLogger({ level: 'silent' }));
  const last = new Date(Date.UTC(2023, 0, 1 + days - 1)).getUTCFullYear();
  for (let year = 2023; year <= last; year++) {
    for (const [parent, prefix] of [
      [POSTS, 'posts'],
      [SEGMENTS, 'post_custom_segments'],
    ] as const) {
      await pool.query(
        `CREATE TABLE ${s}.${id(`${prefix}_y${year}`)} PARTITION OF ${s}.${id(parent)}
           FOR VALUES FROM ('default', '${year}-01-01') TO ('default', '${year + 1}-01-01')`,
      );
    }
  }
  await pool.query(
    `INSERT INTO ${s}.posts (_org, _window_start, _window_end, ${id(POST_ID)}, _report_id, brand, market, channel)
     SELECT 'default', date '2023-01-01' + d, date '2023-01-01' + d, p, 'r' || d,
            'brand_' || p % 17, 'market_' || p % 5, 'channel_' || p % 3
       FROM generate_series(0, $1::int - 1) AS d,
            LATERAL generate_series(greatest(0, d - $3::int + 1) * $2::int, d * $2::int + $2::int - 1) AS p`,
    [days, postsPerDay, windowsPerPost],
  );
  await pool.query(
    `INSERT INTO ${s}.post_custom_segments (_org, _window_start, ${id(POST_ID)}, name, value)
     SELECT _org, _window_start, ${id(POST_ID)}, 'Region', 'region_' || ${id(POST_ID)} % 7 FROM ${s}.posts`,
  );
  await pool.query(`VACUUM ANALYZE ${s}.posts, ${s}.post_custom_segments`);
  const ids = await pool.query<{ post_id: string }>(
    `SELECT DISTINCT ${id(POST_ID)}::text AS post_id FROM ${s}.posts ORDER BY 1`,
  );
  const rows = await pool.query<{ n: string }>(`SELECT count(*) AS n FROM ${s}.posts`);
  context.log(
    `readers: dense history: ${rows.rows[0]?.n} rows of ${ids.rows.length} posts, ${days} daily windows, each post in ${windowsPerPost}`,
  );
  return ids.rows.map((r) => r.post_id);
}

async function measureReaders(
  context: BenchContext,
  options: ReadersOptions,
): Promise<{ queries: ReaderQueryResult[]; latest: LatestQueryResult[] }> {
  const { pool } = context;
  const table = (name: string): string => `${id(SCHEMA)}.${id(name)}`;
  // Join on _org too when both tables carry it: it leads the keys of a layout shared by organizations.
  const withOrg = (await hasColumn(pool, POSTS, '_org')) && (await hasColumn(pool, SEGMENTS, '_org'));
  const joinColumns = [...(withOrg ? ['_org'] : []), POST_ID, '_window_start'].map(id).join(', ');
  const ids = (
    await pool.query<{ post_id: string }>(
      `SELECT ${id(POST_ID)}::text AS post_id FROM ${table(POSTS)} ORDER BY ${id(POST_ID)}`,
    )
  ).rows.map((r) => r.post_id);
  if (ids.length === 0) throw new Error('the backfill loaded no posts');
  const connector = { posts: table(POSTS), segments: table(SEGMENTS) };
  const plain = { posts: table(PLAIN_POSTS), segments: table(PLAIN_SEGMENTS) };
  const client = await pool.connect();
  try {
    const out: ReaderQueryResult[] = [];
    for (const query of readerQueries(options, ids, joinColumns)) {
      const result = await compare(client, options, query, query.sql(connector), query.sql(plain));
      context.log(
        `readers: ${query.query}: connector ${result.connectorMs.toFixed(2)} ms, plain ${result.plainMs.toFixed(2)} ms (median of ${result.executions})`,
      );
      out.push(result);
    }
    const loaded = await measureLatest(context, options, client, {
      schema: SCHEMA,
      label: 'loaded history',
      ids,
    });
    const dense = { days: options.dense.days, windows: options.dense.windowsPerPost };
    const denseIds = await denseHistory(context, options);
    try {
      const measured = await measureLatest(context, options, client, {
        schema: DENSE_SCHEMA,
        label: `${dense.days} days, each post in ${dense.windows} windows`,
        ids: denseIds,
      });
      return { queries: out, latest: [...loaded, ...measured] };
    } finally {
      await pool.query(`DROP SCHEMA IF EXISTS ${id(DENSE_SCHEMA)} CASCADE`);
    }
  } finally {
    client.release();
  }
}

export async function benchReaders(context: BenchContext, options: ReadersOptions): Promise<ReadersResult> {
  const { pool } = context;
  await dropSchema(pool);
  try {
    context.log(
      `readers: backfill ${options.from}..${options.to}, 1-day windows of ${options.postsPerDay} posts, --concurrency ${options.concurrency}`,
    );
    const load = await backfill(context, options);
    const sample = Math.min(options.commitSample, Math.floor(load.commits.length / 2));
    if (sample === 0) throw new Error('the backfill logged no commit lines');
    const firstCommitsMs = median(load.commits.slice(0, sample));
    const lastCommitsMs = median(load.commits.slice(-sample));
    context.log(
      `readers: ${load.commits.length} commits in ${Math.round(load.wallMs)} ms; median commit of the first ${sample} ${firstCommitsMs.toFixed(1)} ms, of the last ${sample} ${lastCommitsMs.toFixed(1)} ms`,
    );
    await plainCopy(context, POSTS, PLAIN_POSTS);
    await plainCopy(context, SEGMENTS, PLAIN_SEGMENTS);
    const all = [POSTS, SEGMENTS, PLAIN_POSTS, PLAIN_SEGMENTS].map((t) => `${id(SCHEMA)}.${id(t)}`);
    await pool.query(`VACUUM ANALYZE ${all.join(', ')}`);
    const counts = await pool.query<{ posts: string; segments: string }>(
      `SELECT (SELECT count(*) FROM ${id(SCHEMA)}.${id(POSTS)}) AS posts,
              (SELECT count(*) FROM ${id(SCHEMA)}.${id(SEGMENTS)}) AS segments`,
    );
    const { queries, latest } = await measureReaders(context, options);
    const connectorSize = await treeSize(pool, [POSTS, SEGMENTS]);
    const plainSize = await treeSize(pool, [PLAIN_POSTS, PLAIN_SEGMENTS]);
    context.log(
      `readers: size ${connectorSize.bytes} bytes in ${connectorSize.relations} tables, plain ${plainSize.bytes} bytes`,
    );
    return {
      from: options.from,
      to: options.to,
      windows: cutWindows(options.from, options.to, 1).length,
      postsPerDay: options.postsPerDay,
      concurrency: options.concurrency,
      posts: Number(counts.rows[0]!.posts),
      segments: Number(counts.rows[0]!.segments),
      backfillMs: load.wallMs,
      commits: load.commits.length,
      commitSample: sample,
      firstCommitsMs,
      lastCommitsMs,
      commitRatio: lastCommitsMs / firstCommitsMs,
      queries,
      latest,
      connectorRelations: connectorSize.relations,
      connectorBytes: connectorSize.bytes,
      plainBytes: plainSize.bytes,
      sizeRatio: connectorSize.bytes / plainSize.bytes,
    };
  } finally {
    await dropSchema(pool);
  }
}
