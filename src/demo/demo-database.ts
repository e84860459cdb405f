import { EtlError, StoreError } from '../errors.js';
import { startEmbeddedPostgres } from './embedded-postgres.js';

export interface DemoDatabase {
  readonly url: string;
  /** Where it came from, for the demo's output. */
  readonly kind: 'given' | 'embedded';
  /** Stops an embedded server (and deletes its data); nothing for a configured one. */
  stop(): Promise<void>;
}

/**
 * The database the demo loads into: the one named by --database-url, otherwise an embedded PostgreSQL. When that cannot
 * start, the demo writes nowhere: the error says why and how to point the demo at a server.
 */
export async function openDemoDatabase(
  configuredUrl: string | undefined,
  signal: AbortSignal,
): Promise<DemoDatabase> {
  if (configuredUrl !== undefined && configuredUrl.trim() !== '') {
    return { url: configuredUrl, kind: 'given', stop: async () => {} };
  }
  try {
    const embedded = await startEmbeddedPostgres({ signal });
    return { url: embedded.url, kind: 'embedded', stop: () => embedded.stop() };
  } catch (error) {
    if (error instanceof EtlError && error.code === 'ABORTED') throw error;
    const reason = error instanceof Error ? error.message : String(error);
    throw new StoreError(
      'DB_ERROR',
      `${reason}; to load into a PostgreSQL server of yours instead: npm run demo -- --database-url postgres://user:password@host:5432/database`,
      { cause: error },
    );
  }
}
