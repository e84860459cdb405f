/*
 * npm run bench:widening: how long readers wait while a bigint column of a long loaded history is widened to
 * numeric, with a plain `ALTER TABLE … TYPE numeric` and with the connector's partition-by-partition copy and
 * swap (src/load/column-retype.ts), on month partitions. A reader queries one window at a time, round the clock, on its own
 * connection; its longest query is the longest wait a reader saw. Sizes: 200 windows of 200,000 and 2,000,000
 * rows (`--smoke`: 10 windows, 2,000 rows). Prints a table and writes bench/widening-results.json.
 */
import { writeFileSync } from 'node:fs';
import { cpus, totalmem } from 'node:os';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import pg from 'pg';
import { retypeColumn } from '../src/load/column-retype.js';
import { withTransaction } from '../src/load/database.js';
import { migrate } from '../src/load/migrate.js';
import { ensurePartitions, partitionKeys } from '../src/load/period-partitions.js';
import { createLogger } from '../src/logger.js';

const RESULTS = fileURLToPath(new URL('../../bench/widening-results.json', import.meta.url));
const id = pg.escapeIdentifier;
const FIRST_WINDOW = Date.parse('2022-01-03T00:00:00Z');
const WEEK_MS = 7 * 86_400_000;

type Method = 'plain ALTER TABLE' | 'partition by partition';

interface Measure {
  readonly rows: number;
  readonly windows: number;
  readonly partitions: number;
  readonly method: Method;
  /** The widening from start to commit. */
  readonly totalMs: number;
  /** The longest reader query while it ran. */
  readonly longestReadMs: number;
  /** The longest reader query before it started: what a reader waits anyway. */
  readonly baselineReadMs: number;
  readonly swapMs?: number;
}

function day(offsetWeeks: number): string {
  return new Date(FIRST_WINDOW + offsetWeeks * WEEK_MS).toISOString().slice(0, 10);
}

/**
 * posts with `partitions` weekly windows holding `rows` rows in all, total_spend bigint, in month partitions
 * (the finest period the connector makes: the most partitions to copy and swap).
 */
async function buildHistory(pool: pg.Pool, schema: string, partitions: number, rows: number): Promise<void> {
  await migrate(pool, { schema, postIdField: 'platform_post_id' }, createLogger({ level: 'silent' }));
  const s = id(schema);
  await pool.query(`ALTER TABLE ${s}.posts ADD COLUMN total_spend bigint, ADD COLUMN caption text`);
  await withTransaction(pool, undefined, async (client) => {
    for (let w = 0; w < partitions; w++)
      await ensurePartitions(client, { schema, org: 'default' }, 'month', day(w));
  });
  await pool.query(
    `INSERT INTO ${s}.posts (_org, platform_post_id, _window_start, _window_end, _report_id, total_spend, caption)
     SELECT 'default', 17000000000000000 + g, $1::date + 7 * (g % $2), $1::date + 7 * (g % $2) + 6, 'bench', g % 50000,
            'a caption of some length, as posts have ' || g
       FROM generate_series(0, $3 - 1) AS g`,
    [day(0), partitions, rows],
  );
  await pool.query(`VACUUM ANALYZE ${s}.posts`);
}

/** Queries one window after another until stopped; returns the longest query. */
function startReader(url: string, schema: string, partitions: number): { stop: () => Promise<number> } {
  const client = new pg.Client({ connectionString: url });
  let running = true;
  let longest = 0;
  const loop = (async () => {
    await client.connect();
    for (let w = 0; running; w = (w + 1) % partitions) {
      const started = performance.now();
      await client.query(
        `SELECT count(*), max(total_spend) FROM ${id(schema)}.posts WHERE _window_start = $1`,
        [day(w)],
      );
      longest = Math.max(longest, performance.now() - started);
    }
    await client.end();
  })();
  return {
    stop: async () => {
      running = false;
      await loop;
      return longest;
    },
  };
}

async function measure(
  pool: pg.Pool,
  url: string,
  partitions: number,
  rows: number,
  method: Method,
  log: (line: string) => void,
): Promise<Measure> {
  const schema = `widen_${method === 'plain ALTER TABLE' ? 'plain' : 'copy'}_${rows}`;
  log(`${rows.toLocaleString('en')} rows in ${partitions} windows: building ${schema}`);
  await buildHistory(pool, schema, partitions, rows);
  const baselineReader = startReader(url, schema, partitions);
  await new Promise((resolve) => setTimeout(resolve, 2000));
  const baselineReadMs = await baselineReader.stop();
  const periods = await pool.query<{ n: number }>(
    'SELECT count(*)::int AS n FROM pg_inherits WHERE inhparent = to_regclass($1)',
    [`${id(schema)}.posts`],
  );
  const reader = startReader(url, schema, partitions);
  await new Promise((resolve) => setTimeout(resolve, 500));
  log(`${schema}: widening with ${method}`);
  const started = performance.now();
  let swapMs: number | undefined;
  if (method === 'plain ALTER TABLE') {
    await pool.query(`ALTER TABLE ${id(schema)}.posts ALTER COLUMN total_spend TYPE numeric`);
  } else {
    const result = await withTransaction(pool, undefined, (client) =>
      retypeColumn(client, {
        schema,
        table: 'posts',
        column: 'total_spend',
        type: 'numeric',
        ...partitionKeys('platform_post_id'),
        postIdField: 'platform_post_id',
      }),
    );
    swapMs = result.swapMs;
  }
  const totalMs = performance.now() - started;
  await new Promise((resolve) => setTimeout(resolve, 500));
  const longestReadMs = await reader.stop();
  await pool.query(`DROP SCHEMA ${id(schema)} CASCADE`);
  return {
    rows,
    windows: partitions,
    partitions: periods.rows[0]?.n ?? 0,
    method,
    totalMs,
    longestReadMs,
    baselineReadMs,
    ...(swapMs === undefined ? {} : { swapMs }),
  };
}

function seconds(ms: number): string {
  return `${(ms / 1000).toFixed(2)} s`;
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

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      smoke: { type: 'boolean', default: false },
      'database-url': { type: 'string', default: 'postgres://postgres@127.0.0.1:5432/postgres' },
      partitions: { type: 'string' },
      rows: { type: 'string' },
    },
  });
  const smoke = values.smoke === true;
  const partitions = Number(values.partitions ?? (smoke ? 10 : 200));
  const sizes = (values.rows ?? (smoke ? '2000' : '200000,2000000')).split(',').map(Number);
  const serverUrl = values['database-url']!;
  const name = `bench_widening_${Date.now().toString(36)}`;
  const admin = new pg.Client({ connectionString: serverUrl });
  await admin.connect();
  await admin.query(`CREATE DATABASE ${id(name)}`);
  const url = new URL(serverUrl);
  url.pathname = `/${name}`;
  const pool = new pg.Pool({ connectionString: url.toString(), max: 2 });
  pool.on('error', () => {});
  const log = (line: string) => process.stderr.write(`bench: ${line}\n`);
  const version =
    (await pool.query<{ server_version: string }>('SHOW server_version')).rows[0]?.server_version ?? '?';
  const machine = `${cpus().length} cores (${cpus()[0]?.model.trim() ?? 'unknown'}), ${Math.round(totalmem() / 2 ** 30)} GiB, Node ${process.versions.node}, PostgreSQL ${version}`;
  try {
    const results: Measure[] = [];
    for (const rows of sizes) {
      for (const method of ['plain ALTER TABLE', 'partition by partition'] as const) {
        results.push(await measure(pool, url.toString(), partitions, rows, method, log));
      }
    }
    const lines = [
      [
        'Rows',
        'Windows',
        'Partitions',
        'Widening',
        'Took',
        "Readers' longest wait",
        'Of which the swap',
        'Reader alone',
      ],
      ...results.map((r) => [
        r.rows.toLocaleString('en'),
        String(r.windows),
        String(r.partitions),
        r.method,
        seconds(r.totalMs),
        seconds(r.longestReadMs),
        r.swapMs === undefined ? '' : seconds(r.swapMs),
        seconds(r.baselineReadMs),
      ]),
    ];
    process.stdout.write(`${table(lines)}\n\nMachine: ${machine}\n`);
    writeFileSync(
      RESULTS,
      `${JSON.stringify({ date: new Date().toISOString(), smoke, machine, results }, null, 2)}\n`,
    );
    log(`results written to ${RESULTS}`);
  } finally {
    await pool.end();
    await admin.query(`DROP DATABASE IF EXISTS ${id(name)} WITH (FORCE)`);
    await admin.end();
  }
}

await main();
