import pg from 'pg';
import type { DbConfig } from '../config.js';
import { EtlError, isAbortError, oneLine, StoreError } from '../errors.js';
import type { Logger } from '../logger.js';
import { sqlState } from './pg-error-codes.js';

export interface PoolOptions {
  /** Connections at most (default 10). */
  max?: number;
  /** Shown in pg_stat_activity (default `post-reports-etl`). */
  applicationName?: string;
}

/**
 * The one place that opens PostgreSQL connections. `statement_timeout` is set per session from the config;
 * `sslmode` and the other URL parameters are honoured by pg. Errors of idle connections (a restarted server,
 * a terminated backend) are logged without the connection string, and the pool replaces the connection.
 */
export function createPool(db: DbConfig, logger: Logger, options: PoolOptions = {}): pg.Pool {
  const pool = new pg.Pool({
    connectionString: db.url.reveal(),
    max: options.max ?? 10,
    application_name: options.applicationName ?? 'post-reports-etl',
    ...(db.statementTimeoutMs > 0 ? { statement_timeout: db.statementTimeoutMs } : {}),
  });
  pool.on('error', (error: Error) => {
    logger.warn({ code: sqlState(error), reason: oneLine(error.message) }, 'idle database connection failed');
  });
  return pool;
}

/**
 * Runs `fn` inside BEGIN/COMMIT on one pooled connection. On any error the transaction is rolled back; a
 * connection that cannot even roll back (killed, protocol broken by an aborted COPY) is destroyed, not reused.
 */
export async function withTransaction<T>(
  pool: pg.Pool,
  fn: (client: pg.PoolClient) => Promise<T>,
): Promise<T> {
  const client = await pool.connect();
  // A connection killed while checked out emits 'error' on the client; without a listener that would crash.
  const onError = (): void => {};
  client.on('error', onError);
  let broken: Error | undefined;
  try {
    await client.query('BEGIN');
    const result = await fn(client);
    await client.query('COMMIT');
    return result;
  } catch (error) {
    try {
      await client.query('ROLLBACK');
    } catch (rollbackError) {
      broken = rollbackError instanceof Error ? rollbackError : new Error(String(rollbackError));
    }
    throw error;
  } finally {
    client.off('error', onError);
    client.release(broken);
  }
}

/**
 * Wraps a database failure in a StoreError('DB_ERROR') whose one-line message names the operation and keeps
 * the SQLSTATE; an abort becomes StoreError('ABORTED'); connector errors pass through unchanged.
 */
export function asStoreError(operation: string, error: unknown): EtlError {
  if (error instanceof EtlError) return error;
  if (isAbortError(error)) return new StoreError('ABORTED', `${operation} aborted`, { cause: error });
  const state = sqlState(error);
  const reason = error instanceof Error ? error.message : String(error);
  return new StoreError('DB_ERROR', oneLine(`${operation} failed${state ? ` (${state})` : ''}: ${reason}`), {
    cause: error,
  });
}
