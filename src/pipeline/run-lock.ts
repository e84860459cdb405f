import { setTimeout as sleep } from 'node:timers/promises';
import type pg from 'pg';
import { StoreError } from '../errors.js';

/**
 * One run at a time per schema: a session-level advisory lock held on a dedicated connection for the whole run.
 * A crashed run's connection dies with it, and PostgreSQL frees the lock.
 */
export interface RunLock {
  release(): Promise<void>;
}

const TRY_LOCK = `SELECT pg_try_advisory_lock(hashtextextended('post-reports-etl:run:' || $1, 0)) AS locked`;
const UNLOCK = `SELECT pg_advisory_unlock(hashtextextended('post-reports-etl:run:' || $1, 0))`;
const RETRY_MS = 250;

export async function acquireRunLock(
  pool: pg.Pool,
  schema: string,
  waitMs: number,
  signal?: AbortSignal,
): Promise<RunLock> {
  const client = await pool.connect();
  try {
    const deadline = Date.now() + waitMs;
    for (;;) {
      const { rows } = await client.query<{ locked: boolean }>(TRY_LOCK, [schema]);
      if (rows[0]?.locked) break;
      if (Date.now() >= deadline) {
        throw new StoreError(
          'LOCK_HELD',
          `another run holds the lock on schema "${schema}"; waited ${Math.round(waitMs / 1000)} s (POST_REPORTS_LOCK_WAIT_MS)`,
        );
      }
      await sleep(Math.min(RETRY_MS, Math.max(0, deadline - Date.now())), undefined, { signal });
    }
  } catch (error) {
    client.release();
    throw error;
  }
  let released = false;
  return {
    async release() {
      if (released) return;
      released = true;
      try {
        await client.query(UNLOCK, [schema]);
        client.release();
      } catch (error) {
        // A broken connection frees the lock anyway; drop it from the pool.
        client.release(error instanceof Error ? error : true);
      }
    },
  };
}
