/*
 * Every advisory lock of the connector: its keys and the one hash that turns a key into a lock number. Transaction
 * locks serialize short critical sections (DDL on posts, the window commits, a window's stage); session locks hold a schema
 * for a migration or for a whole run.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import type pg from 'pg';
import { SETTINGS } from '../config.js';
import { StoreError } from '../errors.js';

type Queryable = Pick<pg.ClientBase, 'query'>;

const PREFIX = 'post-reports-etl';
const LOCK_NUMBER = `hashtextextended($1, 0)`;

/** Serializes DDL on posts of one schema. */
export function ddlLockKey(schema: string): string {
  return `${PREFIX}:ddl:${schema}`;
}

/** Serializes the window commits of one schema. */
export function commitLockKey(schema: string): string {
  return `${PREFIX}:commit:${schema}`;
}

/** Serializes the opening of one window's stage. */
export function windowLockKey(schema: string, window: { start: string; end: string }): string {
  return `${PREFIX}:window:${schema}:${window.start}:${window.end}`;
}

/** One migration at a time per schema. */
export function migrateLockKey(schema: string): string {
  return `${PREFIX}:migrate:${schema}`;
}

/** One run at a time per schema. */
export function runLockKey(schema: string): string {
  return `${PREFIX}:run:${schema}`;
}

/** $1 a key: held until the transaction ends. */
export const lockKey = `SELECT pg_advisory_xact_lock(${LOCK_NUMBER})`;

/** Takes a transaction lock on `key`, waiting for it. */
export async function lockForTransaction(db: Queryable, key: string): Promise<void> {
  await db.query(lockKey, [key]);
}

/** Takes the session lock on `key`, waiting for it. */
export async function lockForSession(db: Queryable, key: string): Promise<void> {
  await db.query(`SELECT pg_advisory_lock(${LOCK_NUMBER})`, [key]);
}

/** Lets go of the session lock on `key`. */
export async function unlockSession(db: Queryable, key: string): Promise<void> {
  await db.query(`SELECT pg_advisory_unlock(${LOCK_NUMBER})`, [key]);
}

async function tryLockSession(db: Queryable, key: string): Promise<boolean> {
  const { rows } = await db.query<{ locked: boolean }>(
    `SELECT pg_try_advisory_lock(${LOCK_NUMBER}) AS locked`,
    [key],
  );
  return rows[0]?.locked === true;
}

// pg_locks shows a bigint advisory key as its high and low 32 bits (classid, objid), with objsubid 1.
const HOLDER = `
WITH k AS (SELECT ${LOCK_NUMBER} AS key)
SELECT l.pid, a.application_name, a.backend_start AS since
  FROM pg_locks l CROSS JOIN k LEFT JOIN pg_stat_activity a ON a.pid = l.pid
 WHERE l.locktype = 'advisory' AND l.granted AND l.objsubid = 1
   AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())
   AND l.classid::bigint = (k.key >> 32) & 4294967295 AND l.objid::bigint = k.key & 4294967295`;
const RETRY_MS = 250;

/**
 * One run at a time per schema: a session-level advisory lock held on a dedicated connection for the whole run.
 * A crashed run's connection dies with it, and PostgreSQL frees the lock.
 */
export interface RunLock {
  release(): Promise<void>;
}

export async function acquireRunLock(
  pool: pg.Pool,
  schema: string,
  waitMs: number,
  signal?: AbortSignal,
): Promise<RunLock> {
  const key = runLockKey(schema);
  const client = await pool.connect();
  try {
    const deadline = Date.now() + waitMs;
    while (!(await tryLockSession(client, key))) {
      if (Date.now() >= deadline) {
        throw new StoreError(
          'LOCK_HELD',
          `another run holds the lock on schema "${schema}"; waited ${Math.round(waitMs / 1000)} s (${SETTINGS.lockWaitMs.env})`,
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
        await unlockSession(client, key);
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
export async function runLockHolder(db: Queryable, schema: string): Promise<RunLockHolder | null> {
  const { rows } = await db.query<{ pid: number; application_name: string | null; since: Date | null }>(
    HOLDER,
    [runLockKey(schema)],
  );
  const row = rows[0];
  return row === undefined ? null : { pid: row.pid, applicationName: row.application_name, since: row.since };
}
