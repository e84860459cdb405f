import pg from 'pg';
import { oneLine, StoreError } from '../errors.js';
import { startEmbeddedPostgres } from './embedded-postgres.js';

/** The local server the demo falls back to when no embedded PostgreSQL can start. */
export const LOCAL_DATABASE_URL = 'postgres://postgres@127.0.0.1:5432/postgres';

export interface DemoDatabase {
  readonly url: string;
  /** Where it came from, for the demo's output. */
  readonly kind: 'DATABASE_URL' | 'embedded' | 'local';
  /** Stops an embedded server (and deletes its data); nothing for the others. */
  stop(): Promise<void>;
}

/**
 * The database the demo loads into: DATABASE_URL when set; otherwise an embedded PostgreSQL; otherwise, when that
 * cannot start here, the local server at LOCAL_DATABASE_URL if it answers. `note` receives one line per decision.
 */
export async function openDemoDatabase(
  configuredUrl: string | undefined,
  note: (line: string) => void,
): Promise<DemoDatabase> {
  if (configuredUrl !== undefined && configuredUrl.trim() !== '') {
    return { url: configuredUrl, kind: 'DATABASE_URL', stop: async () => {} };
  }
  try {
    const embedded = await startEmbeddedPostgres();
    return { url: embedded.url, kind: 'embedded', stop: () => embedded.stop() };
  } catch (error) {
    const reason = error instanceof Error ? error.message : String(error);
    note(`embedded PostgreSQL unavailable: ${oneLine(reason, 300)}`);
  }
  if (await reachable(LOCAL_DATABASE_URL)) {
    note(`falling back to the local server at ${LOCAL_DATABASE_URL}`);
    return { url: LOCAL_DATABASE_URL, kind: 'local', stop: async () => {} };
  }
  throw new StoreError(
    'DB_ERROR',
    `no database for the demo: the embedded PostgreSQL did not start and nothing answers at ${LOCAL_DATABASE_URL}; set DATABASE_URL`,
  );
}

async function reachable(url: string): Promise<boolean> {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 3000 });
  try {
    await client.connect();
    await client.query('SELECT 1');
    return true;
  } catch {
    return false;
  } finally {
    await client.end().catch(() => {});
  }
}
