/*
 * Every advisory lock of the connector: its keys and the one hash that turns a key into a lock number. Transaction
 * locks serialize short critical sections (DDL on posts, the window commits, a window's stage); session locks hold a schema
 * for a migration or for a whole run.
 */

import type pg from 'pg';
import { SETTINGS } from '../config.js';
import { databaseFault } from '../error-policy.js';
import { oneLine, StoreError } from '../errors.js';
import { DEFAULT_ORGANIZATION } from '../model/organization.js';
import { backendOf, backendPid } from './database.js';
import { finalError, retryDatabase } from './database-retry.js';
import { cancelOwnBackend } from './queries.js';
import { type Scope, scopeName } from './scope.js';
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

/**
 * The part of a key that names an organization's share of a schema: the schema alone for the default
 * organization, as before a schema held several (a schema's name holds no `/`).
 */
function scopeKey({ schema, org }: Scope): string {
  return org === DEFAULT_ORGANIZATION ? schema : `${schema}/${org}`;
}

/** Serializes the opening of one window's stage. */
export function windowLockKey(scope: Scope, window: { start: string; end: string }): string {
  return `${PREFIX}:window:${scopeKey(scope)}:${window.start}:${window.end}`;
}

/** One process at a time works on a window (held by its claims connection: see window-claims.ts). */
export function windowClaimKey(scope: Scope, window: { start: string; end: string }): string {
  return `${PREFIX}:claim:${scopeKey(scope)}:${window.start}:${window.end}`;
}

/** One migration at a time per schema. */
export function migrateLockKey(schema: string): string {
  return `${PREFIX}:migrate:${schema}`;
}

/** Those who need the schema alone (a migration) queue on it, one at a time, before taking the run lock. */
export function aloneQueueKey(schema: string): string {
  return `${PREFIX}:alone:${schema}`;
}

/** Runs share it; a migration takes it alone. */
export function runLockKey(schema: string): string {
  return `${PREFIX}:run:${schema}`;
}

/** The runs of an organization share it; a reset of the organization takes it alone. */
export function organizationLockKey(scope: Scope): string {
  return `${PREFIX}:org:${scopeKey(scope)}`;
}

/** Those who need an organization alone (a reset) queue on it, as aloneQueueKey. */
export function organizationQueueKey(scope: Scope): string {
  return `${PREFIX}:org-alone:${scopeKey(scope)}`;
}

/**
 * What a run lock holds: the schema (runs share it, a migration takes it alone) or an organization's share of it
 * (its runs share it, its reset takes it alone), with the key those who need it alone queue on, and how messages
 * name it and who holds it alone.
 */
export interface RunLockScope {
  readonly key: string;
  readonly gate: string;
  /** `schema "x"`, or `organization "acme" of schema "x"`. */
  readonly name: string;
  /** `a migration`, `a reset or a rename`. */
  readonly holder: string;
}

export function schemaLockScope(schema: string): RunLockScope {
  return {
    key: runLockKey(schema),
    gate: aloneQueueKey(schema),
    name: `schema "${schema}"`,
    holder: 'a migration',
  };
}

/** The default organization's is named as the schema: for a schema of one organization, it is the schema's. */
export function organizationLockScope(scope: Scope): RunLockScope {
  return {
    key: organizationLockKey(scope),
    gate: organizationQueueKey(scope),
    name: scopeName(scope),
    holder: 'a reset or a rename',
  };
}

/** $1 a key: held until the transaction ends. */
export const lockKey = `SELECT pg_advisory_xact_lock(${LOCK_NUMBER})`;

/** Takes a transaction lock on `key`, waiting for it. */
export async function lockForTransaction(db: Queryable, key: string): Promise<void> {
  await db.query(lockKey, [key]);
}

/**
 * The longest a reset's or a rename's drop of a partition waits for its parent's ACCESS EXCLUSIVE lock before it
 * gives way and is tried again: every reader and writer of the parent queues behind a waiting request, so this
 * bounds what other organizations wait for it.
 */
export const PARENT_LOCK_WAIT_MS = 500;

/**
 * Takes for the transaction what a window commit takes before it writes to the parents: the commit lock, then the
 * DDL lock. DDL on one organization's partitions (a reset or a rename drops them) locks
 * the parents, in no fixed order, and another organization's commit locks them too, posts then
 * post_custom_segments: without this the two could each wait for the other (a deadlock) instead of one for the
 * other.
 */
export async function lockParentsForTransaction(db: Queryable, schema: string): Promise<void> {
  await lockForTransaction(db, commitLockKey(schema));
  await lockForTransaction(db, ddlLockKey(schema));
}

/** Takes the session lock on `key`, waiting for it. */
export async function lockForSession(db: Queryable, key: string): Promise<void> {
  await db.query(`SELECT pg_advisory_lock(${LOCK_NUMBER})`, [key]);
}

/** Lets go of the session lock on `key` (held exclusive unless told). */
export async function unlockSession(
  db: Queryable,
  key: string,
  mode: RunLockMode = 'exclusive',
): Promise<void> {
  const fn = mode === 'shared' ? 'pg_advisory_unlock_shared' : 'pg_advisory_unlock';
  await db.query(`SELECT ${fn}(${LOCK_NUMBER})`, [key]);
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

/** Runs share the schema (an organization); a migration (a reset) has it alone. */
export type RunLockMode = 'shared' | 'exclusive';

/**
 * A run's hold on its schema: a session-level advisory lock on a dedicated connection for the whole run. A crashed
 * run's connection dies with it, and PostgreSQL frees the lock.
 */
export interface RunLock {
  /** How the schema is held now. */
  readonly mode: RunLockMode;
  /** The backend of the session holding the lock now (undefined while it is lost). */
  readonly pid: number | undefined;
  /** From alone to shared, without a moment unheld: once the reset or migration is done, other runs may start. */
  share(): Promise<void>;
  /**
   * Resolves at once while the lock is held. Once its session is lost (a terminated backend, a failover), it
   * resolves when the shared lock is taken again on a new session, and only if nothing held the schema alone
   * meanwhile (see RunLockOptions.regain); it rejects with StoreError('DB_CONNECTION_LOST') when that cannot be
   * proved, or the database does not come back in time. Nothing may be committed until it resolves.
   */
  held(): Promise<void>;
  release(): Promise<void>;
}

/** How a shared run lock whose session was lost is taken again. */
export interface RegainOptions {
  /** How long to wait for the database to come back and the lock to be free. */
  readonly waitMs: number;
  /**
   * A reading of the schema that whoever holds it alone (a reset, a migration) changes for certain: equal
   * readings before the loss and after the lock is taken again prove that nothing held it alone between.
   */
  readonly epoch: (db: Queryable) => Promise<string>;
  /** Told once the lock is lost, with the cause. */
  readonly onLost?: (error: Error) => void;
  /** Told once the lock is held again. */
  readonly onRegained?: () => void;
}

export interface RunLockOptions {
  readonly signal?: AbortSignal;
  /**
   * Why this run needs the schema alone now (a reset, pending migrations), or null: asked again once it is this
   * run's turn among those who need the schema alone, since the one before it may have applied the migrations.
   */
  readonly alone?: (db: Queryable) => Promise<string | null>;
  /** Told once when the run must wait, and for what. */
  readonly onWait?: (message: string) => void;
  /** Absent: a lost lock is never taken again (held() rejects). */
  readonly regain?: RegainOptions;
}

/**
 * Takes the schema's run lock, shared unless `alone` says why not, waiting up to `waitMs` for the runs or the
 * reset in the way; then LOCK_HELD (exit 4). The wait is PostgreSQL's own lock queue, not polling: a reset or a
 * migration waiting for the schema alone gets it before the runs that asked after it, which queue behind it.
 */
export async function acquireRunLock(
  pool: pg.Pool,
  scope: RunLockScope,
  waitMs: number,
  options: RunLockOptions = {},
): Promise<RunLock> {
  const { key, gate, name } = scope;
  const client = await pool.connect();
  const deadline = Date.now() + waitMs;
  let told = false;
  // Waits in PostgreSQL's queue for `lockKey`, until the deadline; LOCK_HELD naming what was waited for.
  const take = async (lockKey: string, mode: RunLockMode, waitingFor: string): Promise<void> => {
    if (await tryLockSession(client, lockKey, mode)) return;
    const left = deadline - Date.now();
    if (left <= 0) {
      throw new StoreError(
        'LOCK_HELD',
        `${waitingFor}; waited ${Math.round(waitMs / 1000)} s (${SETTINGS.lockWaitMs.env})`,
      );
    }
    if (!told) options.onWait?.(`${waitingFor}: waiting up to ${Math.round(waitMs / 1000)} s`);
    told = true;
    await queueForLock(pool, client, lockKey, mode, left, options.signal).catch((error: unknown) => {
      if (databaseFault(error) !== 'lock timeout') throw error;
      throw new StoreError(
        'LOCK_HELD',
        `${waitingFor}; waited ${Math.round(waitMs / 1000)} s (${SETTINGS.lockWaitMs.env})`,
      );
    });
  };
  let mode: RunLockMode;
  let gated = false;
  const sharedWait = `${scope.holder} holds ${name} alone`;
  // The run lock shared, taken while waiting for the process before this one (below).
  let held = false;
  try {
    let reason = (await options.alone?.(client)) ?? null;
    if (reason !== null && !(await tryLockSession(client, gate))) {
      // Another process is before this one among those who need the schema alone: most often a run started at the
      // same moment for the same migrations. Wait for it to share the schema (behind it in the run lock's queue)
      // and ask again: what it did is then done, and every process that waited for it starts at once rather than
      // taking the queue's turns one by one. Only what is still to do alone goes through the queue.
      await take(key, 'shared', sharedWait);
      held = true;
      reason = (await options.alone?.(client)) ?? null;
      if (reason !== null) {
        await unlockSession(client, key, 'shared');
        held = false;
        // Whoever needs the schema alone queues here first, one at a time: once it is its turn, it asks again
        // (the process before it may have done the same), so that only the first waits for the runs.
        await take(gate, 'exclusive', `${reason} needs ${name} alone, and another process is before it`);
        gated = true;
        reason = (await options.alone?.(client)) ?? null;
      }
    } else if (reason !== null) {
      gated = true;
    }
    mode = reason === null ? 'shared' : 'exclusive';
    if (!held) {
      await take(
        key,
        mode,
        reason === null ? sharedWait : `${reason} needs ${name} alone, and other runs are working on it`,
      );
    }
    if (gated && mode === 'shared') {
      await unlockSession(client, gate);
      gated = false;
    }
  } catch (error) {
    // Ending the session frees whatever it holds.
    client.release(
      error instanceof StoreError && !gated && !held ? undefined : error instanceof Error ? error : true,
    );
    throw error;
  }
  const lock = new SessionRunLock(pool, key, client, mode, options, gated ? gate : undefined);
  if (mode === 'shared') {
    try {
      await lock.readEpoch();
    } catch (error) {
      await lock.release();
      throw error;
    }
  }
  return lock;
}

/** Run locks held together (the schema's, then an organization's), taken in that order by every process. */
export interface RunLocks {
  /** Each from alone to shared (RunLock.share). */
  share(): Promise<void>;
  /** Resolves once every one is held (RunLock.held). */
  held(): Promise<void>;
  /** Whether each is held now by its session, as `db`'s own transaction sees it: a commit checks it. */
  heldIn(db: Queryable): Promise<boolean>;
  release(): Promise<void>;
}

/**
 * Takes each run lock in turn (acquireRunLock), all within `waitMs`; on a failure, releases those taken. Every
 * process takes them in the same order, so that none waits for a lock the other holds while holding one it waits
 * for.
 */
export async function acquireRunLocks(
  pool: pg.Pool,
  waitMs: number,
  locks: readonly { readonly scope: RunLockScope; readonly options: RunLockOptions }[],
): Promise<RunLocks> {
  const deadline = Date.now() + waitMs;
  const taken: { lock: RunLock; key: string }[] = [];
  try {
    for (const { scope, options } of locks) {
      const lock = await acquireRunLock(pool, scope, Math.max(0, deadline - Date.now()), options);
      taken.push({ lock, key: scope.key });
    }
  } catch (error) {
    for (const { lock } of taken.reverse()) await lock.release();
    throw error;
  }
  return {
    share: async () => {
      for (const { lock } of taken) await lock.share();
    },
    held: async () => {
      await Promise.all(taken.map(({ lock }) => lock.held()));
    },
    heldIn: async (db) => {
      for (const { lock, key } of taken) {
        const pid = lock.pid;
        if (pid === undefined || !(await sessionHolds(db, pid, [key]))) return false;
      }
      return true;
    },
    release: async () => {
      for (const { lock } of [...taken].reverse()) await lock.release();
    },
  };
}

/**
 * Waits in PostgreSQL's queue for the session lock on `key`, at most `waitMs` (lock_timeout: LOCK_NOT_AVAILABLE),
 * cancelled when `signal` aborts. A session lock taken in a transaction outlives it.
 */
async function queueForLock(
  pool: pg.Pool,
  client: pg.PoolClient,
  key: string,
  mode: RunLockMode,
  waitMs: number,
  signal: AbortSignal | undefined,
): Promise<void> {
  signal?.throwIfAborted();
  const backend = backendOf(client);
  const cancel = (): void => {
    // Only the backend this session read of itself: its pid alone may name another session by now.
    if (backend?.startedAt == null || backend.serverStartedAt == null) return;
    pool.query(cancelOwnBackend, [backend.pid, backend.startedAt, backend.serverStartedAt]).catch(() => {});
  };
  signal?.addEventListener('abort', cancel, { once: true });
  try {
    await client.query('BEGIN');
    try {
      await client.query(`SET LOCAL lock_timeout = ${Math.max(1, Math.round(waitMs))}`);
      await client.query('SET LOCAL statement_timeout = 0');
      const fn = mode === 'shared' ? 'pg_advisory_lock_shared' : 'pg_advisory_lock';
      await client.query(`SELECT ${fn}(${LOCK_NUMBER})`, [key]);
      await client.query('COMMIT');
    } catch (error) {
      await client.query('ROLLBACK').catch(() => {});
      signal?.throwIfAborted();
      throw error;
    }
  } finally {
    signal?.removeEventListener('abort', cancel);
  }
}

class SessionRunLock implements RunLock {
  readonly #pool: pg.Pool;
  readonly #key: string;
  readonly #options: RunLockOptions;
  #client: pg.PoolClient | undefined;
  #mode: RunLockMode;
  #epoch: string | undefined;
  #regaining: Promise<void> | undefined;
  #released = false;
  /** The queue of those who need the schema alone, held until this one shares it. */
  #gate: string | undefined;

  constructor(
    pool: pg.Pool,
    key: string,
    client: pg.PoolClient,
    mode: RunLockMode,
    options: RunLockOptions,
    gate: string | undefined,
  ) {
    this.#pool = pool;
    this.#key = key;
    this.#options = options;
    this.#mode = mode;
    this.#gate = gate;
    this.#hold(client);
  }

  get mode(): RunLockMode {
    return this.#mode;
  }

  get pid(): number | undefined {
    return this.#client === undefined ? undefined : backendPid(this.#client);
  }

  async share(): Promise<void> {
    if (this.#mode === 'shared') return;
    const client = this.#live();
    // A session's own locks never conflict with its requests: the shared lock is granted at once.
    await client.query(`SELECT pg_advisory_lock_shared(${LOCK_NUMBER})`, [this.#key]);
    await this.#unlock(client, 'exclusive');
    this.#mode = 'shared';
    if (this.#gate !== undefined) await unlockSession(client, this.#gate);
    this.#gate = undefined;
    await this.readEpoch();
  }

  /** Reads the epoch the lock is held under (see RegainOptions.epoch). */
  async readEpoch(): Promise<void> {
    const epoch = this.#options.regain?.epoch;
    if (epoch !== undefined) this.#epoch = await epoch(this.#live());
  }

  held(): Promise<void> {
    return this.#regaining ?? Promise.resolve();
  }

  async release(): Promise<void> {
    if (this.#released) return;
    this.#released = true;
    await this.#regaining?.catch(() => {});
    const client = this.#client;
    this.#client = undefined;
    if (client === undefined) return;
    try {
      await this.#unlock(client, this.#mode);
      if (this.#gate !== undefined) await unlockSession(client, this.#gate);
      client.release();
    } catch (error) {
      // A broken connection frees the lock anyway; drop it from the pool.
      client.release(error instanceof Error ? error : true);
    }
  }

  #live(): pg.PoolClient {
    if (this.#client === undefined) throw lostError('the session holding the run lock was lost');
    return this.#client;
  }

  #hold(client: pg.PoolClient): void {
    this.#client = client;
    const onLost = (error: Error): void => {
      client.off('error', onLost);
      if (this.#client !== client || this.#released) return;
      this.#client = undefined;
      client.release(error);
      this.#lost(error);
    };
    client.on('error', onLost);
  }

  #lost(error: Error): void {
    const regain = this.#options.regain;
    const regaining =
      regain === undefined || this.#mode !== 'shared' || this.#epoch === undefined
        ? Promise.reject(lostError(`the session holding the run lock was lost (${oneLine(error.message)})`))
        : this.#regain(regain, error);
    // Awaited through held(); a run that commits nothing more never asks.
    regaining.catch(() => {});
    this.#regaining = regaining;
    regain?.onLost?.(error);
  }

  /**
   * Takes the shared lock again on a new session, through the database retry: a database not back yet and a lock
   * not free yet (held alone by another process for a moment) are both tried again until the wait is over.
   */
  async #regain(regain: RegainOptions, cause: Error): Promise<void> {
    const why = `the session holding the run lock was lost (${oneLine(cause.message)})`;
    const signal = this.#options.signal;
    // Why the lock can never be taken again, whatever the wait.
    let ended: StoreError | undefined;
    try {
      await retryDatabase(
        async () => {
          if (this.#released || signal?.aborted) throw finalError(lostError(why));
          let client: pg.PoolClient | undefined;
          try {
            client = await this.#pool.connect();
            if (!(await tryLockSession(client, this.#key, 'shared'))) {
              client.release();
              client = undefined;
              throw lostError(`${why}, and the lock is not free yet`);
            }
            const epoch = await regain.epoch(client);
            if (epoch !== this.#epoch) {
              ended = lostError(
                `${why}, and the schema or its organization was reset, renamed or migrated before it was taken again`,
              );
              throw finalError(ended);
            }
          } catch (error) {
            // Whatever failed, the connection goes back (ended): one kept by nobody is one the pool never lends again.
            client?.release(error instanceof Error ? error : true);
            throw error;
          }
          this.#hold(client);
          this.#regaining = undefined;
          regain.onRegained?.();
        },
        { waitMs: regain.waitMs, signal },
      );
    } catch {
      if (ended !== undefined) throw ended;
      if (this.#released || signal?.aborted) throw lostError(why);
      throw lostError(
        `${why}, and it could not be taken again within ${Math.round(regain.waitMs / 1000)} s (${SETTINGS.reconnectWaitMs.env})`,
      );
    }
  }

  #unlock(client: pg.PoolClient, held: RunLockMode) {
    return client.query(
      `SELECT ${held === 'shared' ? 'pg_advisory_unlock_shared' : 'pg_advisory_unlock'}(${LOCK_NUMBER})`,
      [this.#key],
    );
  }
}

function lostError(message: string): StoreError {
  return new StoreError('DB_CONNECTION_LOST', message);
}

/** Whether the session `pid` holds every one of `keys` now (as seen by `db`'s own transaction). */
export async function sessionHolds(db: Queryable, pid: number, keys: readonly string[]): Promise<boolean> {
  const holders = await lockHolders(db, keys);
  return keys.every((key) => holders.get(key)?.some((holder) => holder.pid === pid) === true);
}

/** The live session holding each window's claim now (null where none), in the order of `windows`. */
export async function windowClaimHolders(
  db: Queryable,
  scope: Scope,
  windows: readonly { start: string; end: string }[],
): Promise<(LockHolder | null)[]> {
  const keys = windows.map((w) => windowClaimKey(scope, w));
  const holders = await lockHolders(db, keys);
  // A claim is an exclusive lock: one holder at most.
  return keys.map((key) => holders.get(key)?.[0] ?? null);
}

/** The sessions holding the run lock of `schema` now: live runs of every organization (oldest first). */
export async function runLockHolders(db: Queryable, schema: string): Promise<LockHolder[]> {
  const key = runLockKey(schema);
  return (await lockHolders(db, [key])).get(key) ?? [];
}

/** The sessions holding an organization's run lock now: its live runs (oldest first). */
export async function organizationLockHolders(db: Queryable, scope: Scope): Promise<LockHolder[]> {
  const key = organizationLockKey(scope);
  return (await lockHolders(db, [key])).get(key) ?? [];
}
