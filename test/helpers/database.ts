import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { afterAll, inject } from 'vitest';

export interface TestDatabase {
  /** Connection string of a fresh, empty database that only this test file uses. */
  readonly url: string;
  /** A pool on it, ended after the file's tests. */
  readonly pool: pg.Pool;
}

/**
 * Creates a database for the calling test file and drops it after the file's tests, so that files run in
 * parallel and leave nothing behind. Call once, at the top level of a test file: `const db = await createTestDatabase()`.
 */
export async function createTestDatabase(): Promise<TestDatabase> {
  const serverUrl = inject('postgresUrl');
  const name = `etl_test_${randomBytes(8).toString('hex')}`;
  const admin = new pg.Client({ connectionString: serverUrl });
  await admin.connect();
  await admin.query(`CREATE DATABASE ${pg.escapeIdentifier(name)}`);
  const url = new URL(serverUrl);
  url.pathname = `/${name}`;
  const pool = new pg.Pool({ connectionString: url.toString(), max: 4 });
  // A test that kills backends (pg_terminate_backend) must not crash the file through an idle client.
  pool.on('error', () => {});
  afterAll(async () => {
    await pool.end();
    await admin.query(`DROP DATABASE IF EXISTS ${pg.escapeIdentifier(name)} WITH (FORCE)`);
    await admin.end();
  });
  return { url: url.toString(), pool };
}
