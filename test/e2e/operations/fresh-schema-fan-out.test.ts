/*
 * Fan-out on a fresh schema (issue 30): an orchestrator's partitions and duplicate triggers started at the same
 * moment on a schema that does not exist yet. One process migrates it and makes the documented fields' columns;
 * the others wait for that and then share the schema: every migration is applied once, the documented columns are
 * made once, every process exits 0, and the data is exact.
 */
import { readdir } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type RunningSimulator, startSimulator } from '../../../src/simulator/server.js';
import { type CliResult, runCli } from '../../helpers/cli.js';
import { createTestDatabase } from '../../helpers/database.js';
import { cliEnv } from '../../helpers/e2e-env.js';
import { compareWithReference } from '../../helpers/reference-check.js';

const MIGRATIONS = fileURLToPath(new URL('../../../migrations', import.meta.url));
const db = await createTestDatabase();
let sim: RunningSimulator;

beforeAll(async () => {
  sim = await startSimulator({ seed: 30, postsPerDay: 6, generationDelayMs: 200 });
});
afterAll(async () => {
  await sim.close();
});

interface LogLine {
  readonly msg?: string;
  readonly migrations?: readonly string[];
  readonly columns?: { field: string }[];
}

function logLines(result: CliResult): LogLine[] {
  return result.stderr
    .split('\n')
    .filter((line) => line.startsWith('{'))
    .map((line) => JSON.parse(line) as LogLine);
}

describe('fan-out on a fresh schema (the built CLI)', () => {
  it('four partitions and two duplicates at once: migrated once, documented columns made once, all exact', async () => {
    const schema = 'fresh_fan_out';
    const partitions: [string, string][] = [
      ['2026-01-05', '2026-01-18'],
      ['2026-01-19', '2026-02-01'],
      ['2026-02-02', '2026-02-15'],
      ['2026-02-16', '2026-03-01'],
    ];
    const commands = [...partitions, partitions[0]!, partitions[0]!];
    const env = cliEnv(sim, db.url, { POST_REPORTS_SCHEMA: schema, POST_REPORTS_LOCK_WAIT_MS: '60000' });
    const results = await Promise.all(
      commands.map(([from, to]) => runCli(['backfill', '--from', from, '--to', to], env)),
    );
    for (const result of results) expect(result.code, result.stderr.slice(-2000)).toBe(0);

    const lines = results.flatMap(logLines);
    const files = (await readdir(MIGRATIONS)).filter((f) => f.endsWith('.sql')).sort();
    const applied = lines.filter((l) => l.msg === 'migrations applied').flatMap((l) => l.migrations ?? []);
    expect(applied.sort()).toEqual(files);
    const recorded = await db.pool.query<{ name: string }>(
      `SELECT name FROM ${schema}.schema_migrations ORDER BY name`,
    );
    expect(recorded.rows.map((r) => r.name)).toEqual(files);

    // The documented columns by one process, in one line; a page's undocumented fields at most once each.
    const added = lines
      .filter((l) => l.msg === 'new fields: columns added to posts')
      .flatMap((l) => l.columns ?? [])
      .map((c) => c.field);
    expect(added.filter((f) => f === 'total_spend')).toEqual(['total_spend']);
    expect(new Set(added).size).toBe(added.length);

    const loaded = results.reduce(
      (n, r) => n + ((r.summary?.windows as { loaded?: number } | undefined)?.loaded ?? 0),
      0,
    );
    expect(loaded).toBe(8);
    const reference = sim.referencePosts({ start_date: '2026-01-05', end_date: '2026-03-01' });
    const check = await compareWithReference(db.pool, schema, reference);
    expect(check.problems).toEqual([]);
    expect(check.posts).toBe(reference.length);
  });
});
