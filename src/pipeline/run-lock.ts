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
// pg_locks shows a bigint advisory key as its high and low 32 bits (classid, objid), with objsubid 1.
const HOLDER = `
WITH k AS (SELECT hashtextextended('post-reports-etl:run:' || $1, 0) AS key)
SELECT l.pid, a.application_name, a.backend_start AS since
  FROM pg_locks l CROSS JOIN k LEFT JOIN pg_stat_activity a ON a.pid = l.pid
 WHERE l.locktype = 'advisory' AND l.granted AND l.objsubid = 1
   AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())
   AND l.classid::bigint = (k.key >> 32) & 4294967295 AND l.objid::bigint = k.key & 4294967295`;
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

/** The session holding a schema's run lock: a live run (its connection dies with its process). */
export interface RunLockHolder {
  /** The PostgreSQL backend of the run's lock connection. */
  readonly pid: number;
  /** Null when the role reading it may not see other roles' sessions. */
  readonly applicationName: string | null;
  /** When the run's lock connection was opened (null when not visible to the role reading it). */
  readonly since: Date | null;
}

/** Who holds the run lock of `schema` now, or null when no run is alive. */
export async function runLockHolder(
  db: Pick<pg.ClientBase, 'query'>,
  schema: string,
): Promise<RunLockHolder | null> {
  const { rows } = await db.query<{ pid: number; application_name: string | null; since: Date | null }>(
    HOLDER,
    [schema],
  );
  const row = rows[0];
  return row === undefined ? null : { pid: row.pid, applicationName: row.application_name, since: row.since };
}
