/*
 * Every advisory lock of the connector: its keys and the one hash that turns a key into a lock number. Transaction
 * locks serialize short critical sections (DDL on posts, the window commits, a window's stage); session locks hold a schema
 * for a migration or for a whole run.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import type pg from 'pg';
import { SETTINGS } from '../config.js';
import { StoreError } from '../errors.js';
import { parseSessionName, type RunName } from './session-name.js';

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

/** One process at a time works on a window (held by its claims connection: see window-claims.ts). */
export function windowClaimKey(schema: string, window: { start: string; end: string }): string {
  return `${PREFIX}:claim:${schema}:${window.start}:${window.end}`;
}

/** One migration at a time per schema. */
export function migrateLockKey(schema: string): string {
  return `${PREFIX}:migrate:${schema}`;
}

/** Runs share it; a reset or a migration takes it alone. */
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

/** Takes the session lock on `key` if free (shared: with other shared holders); false when it is not. */
export async function tryLockSession(
  db: Queryable,
  key: string,
  mode: RunLockMode = 'exclusive',
): Promise<boolean> {
  const fn = mode === 'shared' ? 'pg_try_advisory_lock_shared' : 'pg_try_advisory_lock';
  const { rows } = await db.query<{ locked: boolean }>(`SELECT ${fn}(${LOCK_NUMBER}) AS locked`, [key]);
  return rows[0]?.locked === true;
}

// pg_locks shows a bigint advisory key as its high and low 32 bits (classid, objid), with objsubid 1.
const HOLDERS = `
WITH k AS (SELECT k.key, ${LOCK_NUMBER.replace('$1', 'k.key')} AS n FROM unnest($1::text[]) AS k(key))
SELECT k.key, l.pid, a.application_name, a.backend_start AS since
  FROM k JOIN pg_locks l
    ON l.locktype = 'advisory' AND l.granted AND l.objsubid = 1
   AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())
   AND l.classid::bigint = (k.n >> 32) & 4294967295 AND l.objid::bigint = k.n & 4294967295
  LEFT JOIN pg_stat_activity a ON a.pid = l.pid
 ORDER BY a.backend_start, l.pid`;
const RETRY_MS = 250;

/** A live session holding an advisory lock: its process dies, its connection dies, the lock is freed. */
export interface LockHolder {
  /** The PostgreSQL backend of the holding connection. */
  readonly pid: number;
  /** Null when the role reading it may not see other roles' sessions. */
  readonly applicationName: string | null;
  /** When the holding connection was opened (null when not visible to the role reading it). */
  readonly since: Date | null;
  /** The run holding it, by host, process id and run id (null for a session that is not a run's). */
  readonly run: RunName | null;
}

/** The sessions holding each of `keys` now (keys nobody holds are absent). */
export async function lockHolders(
  db: Queryable,
  keys: readonly string[],
): Promise<Map<string, LockHolder[]>> {
  const holders = new Map<string, LockHolder[]>();
  if (keys.length === 0) return holders;
  const { rows } = await db.query<{
    key: string;
    pid: number;
    application_name: string | null;
    since: Date | null;
  }>(HOLDERS, [keys]);
  for (const row of rows) {
    const list = holders.get(row.key) ?? [];
    list.push({
      pid: row.pid,
      applicationName: row.application_name,
      since: row.since,
      run: parseSessionName(row.application_name),
    });
    holders.set(row.key, list);
  }
  return holders;
}

/** Runs share the schema; a reset or a migration has it alone. */
export type RunLockMode = 'shared' | 'exclusive';

/**
 * A run's hold on its schema: a session-level advisory lock on a dedicated connection for the whole run. A crashed
 * run's connection dies with it, and PostgreSQL frees the lock.
 */
export interface RunLock {
  /** How the schema is held now. */
  readonly mode: RunLockMode;
  /** From alone to shared, without a moment unheld: once the reset or migration is done, other runs may start. */
  share(): Promise<void>;
  release(): Promise<void>;
}

export interface RunLockOptions {
  readonly signal?: AbortSignal;
  /**
   * Why this run needs the schema alone now (a reset, pending migrations), or null: asked again while it waits,
   * since another run may finish the migrations meanwhile.
   */
  readonly alone?: (db: Queryable) => Promise<string | null>;
  /** Told once when the run must wait, and for what. */
  readonly onWait?: (message: string) => void;
}

/**
 * Takes the schema's run lock, shared unless `alone` says why not, waiting up to `waitMs` for the runs or the
 * reset in the way; then LOCK_HELD (exit 4).
 */
export async function acquireRunLock(
  pool: pg.Pool,
  schema: string,
  waitMs: number,
  options: RunLockOptions = {},
): Promise<RunLock> {
  const key = runLockKey(schema);
  const client = await pool.connect();
  let mode: RunLockMode;
  try {
    const deadline = Date.now() + waitMs;
    let told = false;
    for (;;) {
      const reason = (await options.alone?.(client)) ?? null;
      mode = reason === null ? 'shared' : 'exclusive';
      if (await tryLockSession(client, key, mode)) break;
      const waitingFor =
        reason === null
          ? `a reset or a migration holds schema "${schema}" alone`
          : `${reason} needs schema "${schema}" alone, and other runs are working on it`;
      if (Date.now() >= deadline) {
        throw new StoreError(
          'LOCK_HELD',
          `${waitingFor}; waited ${Math.round(waitMs / 1000)} s (${SETTINGS.lockWaitMs.env})`,
        );
      }
      if (!told) options.onWait?.(`${waitingFor}: waiting up to ${Math.round(waitMs / 1000)} s`);
      told = true;
      await sleep(Math.min(RETRY_MS, Math.max(0, deadline - Date.now())), undefined, {
        ...(options.signal ? { signal: options.signal } : {}),
      });
    }
  } catch (error) {
    client.release();
    throw error;
  }
  let released = false;
  const unlock = (held: RunLockMode) =>
    client.query(
      `SELECT ${held === 'shared' ? 'pg_advisory_unlock_shared' : 'pg_advisory_unlock'}(${LOCK_NUMBER})`,
      [key],
    );
  return {
    get mode() {
      return mode;
    },
    async share() {
      if (mode === 'shared') return;
      // A session's own locks never conflict with its requests: the shared lock is granted at once.
      await client.query(`SELECT pg_advisory_lock_shared(${LOCK_NUMBER})`, [key]);
      await unlock('exclusive');
      mode = 'shared';
    },
    async release() {
      if (released) return;
      released = true;
      try {
        await unlock(mode);
        client.release();
      } catch (error) {
        // A broken connection frees the lock anyway; drop it from the pool.
        client.release(error instanceof Error ? error : true);
      }
    },
  };
}

/** The live session holding each window's claim now (null where none), in the order of `windows`. */
export async function windowClaimHolders(
  db: Queryable,
  schema: string,
  windows: readonly { start: string; end: string }[],
): Promise<(LockHolder | null)[]> {
  const keys = windows.map((w) => windowClaimKey(schema, w));
  const holders = await lockHolders(db, keys);
  // A claim is an exclusive lock: one holder at most.
  return keys.map((key) => holders.get(key)?.[0] ?? null);
}

/** The sessions holding the run lock of `schema` now: live runs (oldest first). */
export async function runLockHolders(db: Queryable, schema: string): Promise<LockHolder[]> {
  const key = runLockKey(schema);
  return (await lockHolders(db, [key])).get(key) ?? [];
}
