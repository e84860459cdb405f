import { setTimeout as sleep } from 'node:timers/promises';
import type pg from 'pg';

/** A session waiting on a lock: its process id and what it waits for ('advisory', 'relation', 'transactionid'…). */
export interface LockWait {
  readonly pid: number;
  readonly event: string;
}

/**
 * Resolves once a session of the database `db` is connected to (of `applicationName`, when given) waits on a
 * lock, polling every 20 ms; the session asking is never the one found.
 */
export async function lockWait(
  db: Pick<pg.ClientBase, 'query'>,
  applicationName?: string,
): Promise<LockWait> {
  for (;;) {
    const { rows } = await db.query<LockWait>(
      `SELECT pid, wait_event AS event FROM pg_stat_activity
        WHERE datname = current_database() AND wait_event_type = 'Lock' AND pid <> pg_backend_pid()
          AND ($1::text IS NULL OR application_name = $1)`,
      [applicationName ?? null],
    );
    if (rows[0] !== undefined) return rows[0];
    await sleep(20);
  }
}

/**
 * Resolves once at least `count` sessions of the database `db` is connected to wait for the advisory lock on `key`
 * (the 64-bit lock `hashtextextended(key, 0)` the connector takes), polling every 20 ms; returns their process ids.
 */
export async function advisoryLockWaiters(
  db: Pick<pg.ClientBase, 'query'>,
  key: string,
  count = 1,
): Promise<number[]> {
  for (;;) {
    const { rows } = await db.query<{ pid: number }>(
      `SELECT l.pid FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid
        WHERE a.datname = current_database() AND a.wait_event_type = 'Lock'
          AND l.locktype = 'advisory' AND NOT l.granted AND l.objsubid = 1
          AND l.classid::bigint = (hashtextextended($1, 0) >> 32) & 4294967295
          AND l.objid::bigint = hashtextextended($1, 0) & 4294967295`,
      [key],
    );
    if (rows.length >= count) return rows.map((r) => r.pid);
    await sleep(20);
  }
}
