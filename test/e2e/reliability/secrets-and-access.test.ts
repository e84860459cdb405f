import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it, onTestFinished } from 'vitest';
import { type RunningSimulator, startSimulator } from '../../../src/simulator/server.js';
import { type CliResult, runCli } from '../../helpers/cli.js';
import { startCuttingProxy } from '../../helpers/cutting-proxy.js';
import { createTestDatabase } from '../../helpers/database.js';
import { cliEnv } from '../../helpers/e2e-env.js';
import { compareWithReference, snapshotSchema } from '../../helpers/reference-check.js';

const db = await createTestDatabase();
const TOKEN = `tok-Zq7${randomBytes(12).toString('hex')}-secret`;
const PASSWORD = `pw-Kx9${randomBytes(10).toString('hex')}`;
const ROLE = `etl_owner_${randomBytes(4).toString('hex')}`;
const SCHEMA = 'owned';
let sim: RunningSimulator;
let ownerUrl: string;

beforeAll(async () => {
  sim = await startSimulator({ seed: 21, postsPerDay: 25, token: TOKEN, generationDelayMs: 50 });
  // A role that is no superuser and owns only its schema: what an operator would give the connector.
  await db.pool.query(`CREATE ROLE ${ROLE} LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE PASSWORD '${PASSWORD}'`);
  await db.pool.query(`CREATE SCHEMA ${SCHEMA} AUTHORIZATION ${ROLE}`);
  const url = new URL(db.url);
  url.username = ROLE;
  url.password = PASSWORD;
  ownerUrl = url.toString();
});
afterAll(async () => {
  await sim.close();
  await db.pool.query(`DROP SCHEMA IF EXISTS ${SCHEMA} CASCADE`);
  await db.pool.query(`DROP ROLE IF EXISTS ${ROLE}`);
});

const args = ['backfill', '--from', '2025-03-03', '--to', '2025-03-30', '--schema', SCHEMA];

describe('secrets and access (the built CLI)', () => {
  it('loads exactly as a role that owns only its schema, and no token or password leaks anywhere', async () => {
    const { rows } = await db.pool.query<{ rolsuper: boolean }>(
      'SELECT rolsuper FROM pg_roles WHERE rolname = $1',
      [ROLE],
    );
    expect(rows[0]?.rolsuper).toBe(false);
    const captured: CliResult[] = [];
    const env = cliEnv(sim, ownerUrl, { LOG_LEVEL: 'trace', POST_REPORTS_WINDOW_ATTEMPTS: '1' });

    // A backfill under faults, with one window that keeps failing: retries, warnings and errors get logged.
    sim.setFaults({
      rateLimitShare: 0.2,
      retryAfterSeconds: 0,
      serverErrorShare: 0.1,
      failReportStartDates: ['2025-03-10'],
    });
    const faulty = await runCli(args, env);
    captured.push(faulty);
    expect(faulty.code, faulty.stderr.slice(-1500)).toBe(3);
    expect(faulty.summary).toMatchObject({ status: 'partial', windows: { failed: 1 } });
    sim.setFaults({ rateLimitShare: 0, serverErrorShare: 0, failReportStartDates: [] });

    // A bad filter, a refused plain-http host, and an unreachable database: error paths print their own text.
    captured.push(await runCli([...args, '--segment', 'Planet=Mars'], env));
    captured.push(await runCli(args, { ...env, DATABASE_URL: ownerUrl.replace(/:\d+\//, ':1/') }));
    captured.push(await runCli(['status', '--json', '--schema', SCHEMA], env));

    // The API hands back the same failed report until its reuse period ends.
    sim.advanceTime(4 * 3_600_000);
    const clean = await runCli(args, env);
    captured.push(clean);
    expect(clean.code, clean.stderr).toBe(0);
    const reference = sim.referencePosts({ start_date: '2025-03-03', end_date: '2025-03-30' });
    expect((await compareWithReference(db.pool, SCHEMA, reference)).problems).toEqual([]);
    const { rows: owners } = await db.pool.query<{ owner: string }>(
      `SELECT DISTINCT tableowner AS owner FROM pg_tables WHERE schemaname = $1`,
      [SCHEMA],
    );
    expect(owners).toEqual([{ owner: ROLE }]);

    // The failing window's error was recorded (so the scan below reads a real last_error), and nothing holds a secret.
    const tables = await snapshotSchema(db.pool, SCHEMA);
    expect(tables).toContain('report_windows:');
    const everything = [
      ...captured.flatMap((r) => [r.stdout, r.stderr, JSON.stringify(r.summary ?? null)]),
      tables,
      ...sim.requests().map((r) => `${r.method} ${r.path}?${r.query}`),
    ].join('\n');
    expect(everything.length).toBeGreaterThan(10_000);
    expect(faulty.stderr).toContain('REPORT_FAILED');
    expect(everything).not.toContain(TOKEN);
    expect(everything).not.toContain(PASSWORD);
    expect(everything).not.toContain(encodeURIComponent(PASSWORD));
    // The token travels in the Authorization header only, never in a URL.
    expect(sim.requests().every((r) => r.authorization === `Bearer ${TOKEN}`)).toBe(true);
  });

  it('refuses plain http to a host that is not loopback (exit 2), unless allowed', async () => {
    const result = await runCli(args, {
      ...cliEnv(sim, db.url),
      POST_REPORTS_BASE_URL: 'http://example.com/v4',
    });
    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(/http:\/\/ to example\.com: use https, or set POST_REPORTS_ALLOW_HTTP/);
    expect(result.summary).toMatchObject({ exitCode: 2, status: 'invalid' });
  });

  it('honours sslmode=require in DATABASE_URL: a server without SSL is refused with one clear line', async () => {
    // The test's server behind a proxy that has no SSL (it answers every SSLRequest 'N'), whatever the server's own.
    const target = new URL(db.url);
    const proxy = await startCuttingProxy({ host: target.hostname, port: Number(target.port || 5432) });
    onTestFinished(() => proxy.close());
    const url = new URL(proxy.urlThrough(db.url));
    // The same server without sslmode: the proxy itself lets a run through.
    const into = (schema: string) => [...args.slice(0, -1), schema];
    const plain = await runCli(into('plain'), cliEnv(sim, url.toString()));
    expect(plain.code, plain.stderr).toBe(0);
    expect(await snapshotSchema(db.pool, 'plain')).not.toBe('(no schema)');
    url.searchParams.set('sslmode', 'require');
    const result = await runCli(into('tls'), cliEnv(sim, url.toString()));
    expect(result.code).toBe(1);
    const errors = result.stderr.split('\n').filter((l) => l.startsWith('post-reports-etl: error:'));
    expect(errors).toHaveLength(1);
    expect(errors[0]).toMatch(/PostgreSQL.*SSL|SSL.*PostgreSQL/i);
    expect(await snapshotSchema(db.pool, 'tls')).toBe('(no schema)');
  });
});
