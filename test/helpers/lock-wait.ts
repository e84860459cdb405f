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
