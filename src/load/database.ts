import { setTimeout as sleep } from 'node:timers/promises';
import pg from 'pg';
import { type DbConfig, SETTINGS } from '../config.js';
import { answeredByServer, type DatabaseDeadline, databaseDeadline, sqlState } from '../error-policy.js';
import { EtlError, isAbortError, oneLine, StoreError } from '../errors.js';
import type { Logger } from '../logger.js';
import { cancelOwnBackend, readOwnBackend, terminateOwnBackend } from './queries.js';

export interface PoolOptions {
  /** Connections at most (default 10). */
  max?: number;
  /** Shown in pg_stat_activity (default `post-reports-etl`). */
  applicationName?: string;
}

// A dead peer (a server gone without a FIN) is noticed by TCP keepalive instead of a read that never ends.
const KEEPALIVE_INITIAL_DELAY_MS = 10_000;

/**
 * The settings the connector's SQL and its reading of results rely on, pinned in every session so that no default
 * of the server, the database or the role (ALTER DATABASE/ROLE … SET) changes them. pg reads dates and timestamps
 * in the ISO form only (another DateStyle gives a date it cannot read); the window commit and the claims are built
 * for read committed (serializable would abort commits with 40001 that nothing needs); literals and the text of
 * numbers, intervals and bytes are read in PostgreSQL's default forms. Dates are computed in UTC wherever they are
 * (AT TIME ZONE 'UTC'), and names are always qualified, so search_path is left as it is.
 */
export const PINNED_SETTINGS: readonly (readonly [name: string, value: string])[] = [
  ['DateStyle', 'ISO, MDY'],
  ['IntervalStyle', 'postgres'],
  ['TimeZone', 'UTC'],
  ['default_transaction_isolation', 'read committed'],
  ['standard_conforming_strings', 'on'],
  ['extra_float_digits', '1'],
  ['bytea_output', 'hex'],
];

/**
 * What every session of the connector sets once connected, as statements rather than startup parameters (a
 * pooler such as PgBouncer refuses unknown startup parameters): the pinned settings, and the deadlines. The run
 * lock's session sits idle for a whole run: a server (or a managed service) that closes idle sessions must not
 * end it.
 */
export function sessionSettings(db: DbConfig): string {
  const settings: [string, number | undefined][] = [
    // 0 leaves the server's own value, which is "no limit" by default.
    ['statement_timeout', db.statementTimeoutMs > 0 ? db.statementTimeoutMs : undefined],
    ['lock_timeout', db.lockTimeoutMs || undefined],
    ['idle_in_transaction_session_timeout', db.idleInTransactionTimeoutMs || undefined],
  ];
  return [
    ...PINNED_SETTINGS.map(([name, value]) => `SET ${name} = '${value}'`),
    ...settings
      .filter((entry): entry is [string, number] => entry[1] !== undefined)
      .map(([name, value]) => `SET ${name} = ${Math.round(value)}`),
    // PostgreSQL 14 added it; an older server is refused by the preflight, with its version named.
    `SELECT set_config('idle_session_timeout', '0', false) WHERE current_setting('server_version_num')::int >= 140000`,
  ].join('; ');
}

/** Where createPool keeps the connections checked out of a pool now. */
const CHECKED_OUT = Symbol('post-reports-etl checked out');

/**
 * The one place that opens PostgreSQL connections. Every wait has a deadline: `statement_timeout`,
 * `lock_timeout` and `idle_in_transaction_session_timeout` are set per session from the config (0: none; see
 * sessionSettings),
 * opening a connection or waiting for a free one is bounded by `connectTimeoutMs`, and TCP keepalive notices a
 * server that vanished; `idle_session_timeout` is turned off. `sslmode` and the other URL parameters are
 * honoured by pg. Every connection has an `error` listener from its first moment, checked out or idle: a
 * terminated backend, a restarted server or a network cut is logged on one line without the connection string,
 * and whoever holds the connection learns it from its next query (the pool replaces an idle one).
 */
/**
 * A client that closes its socket when it cannot log in. pg leaves it open when the login fails on the client's
 * side (a server asking for a password the connection string does not give): the server then keeps it until its
 * authentication timeout, and the process, done, waits for it.
 */
class ClosingClient extends pg.Client {
  override connect(): Promise<pg.Client>;
  override connect(callback: ((err: Error) => void) | ((err: null, c: pg.Client) => void)): void;
  override connect(
    callback?: ((err: Error) => void) | ((err: null, c: pg.Client) => void),
  ): Promise<pg.Client> | undefined {
    if (callback === undefined) {
      return super.connect().catch((error: unknown) => {
        this.end().catch(() => {});
        throw error;
      });
    }
    const told = callback as (err: Error | null, c?: pg.Client) => void;
    super.connect((error: Error | null) => {
      if (error) this.end().catch(() => {});
      told(error, this);
    });
    return undefined;
  }
}

export function createPool(db: DbConfig, logger: Logger, options: PoolOptions = {}): pg.Pool {
  const setup = sessionSettings(db);
  const pool = new pg.Pool({
    Client: ClosingClient,
    connectionString: db.url.reveal(),
    max: options.max ?? 10,
    application_name: options.applicationName ?? 'post-reports-etl',
    keepAlive: true,
    keepAliveInitialDelayMillis: KEEPALIVE_INITIAL_DELAY_MS,
    ...(db.connectTimeoutMs ? { connectionTimeoutMillis: db.connectTimeoutMs } : {}),
    // Awaited by the pool before it hands the connection out: a session that cannot be set up is not used.
    onConnect: async (client: pg.ClientBase) => {
      const results: unknown = await client.query(`${setup}; ${readOwnBackend}`);
      const last = Array.isArray(results) ? results.at(-1) : results;
      const row = (last as pg.QueryResult<BackendRow> | undefined)?.rows[0];
      if (row !== undefined && typeof row.pid === 'number') {
        rememberBackend(client, {
          pid: row.pid,
          startedAt: row.started,
          serverStartedAt: row.server_started,
        });
      }
    },
  });
  const checkedOut = new Set<pg.PoolClient>();
  (pool as { [CHECKED_OUT]?: Set<pg.PoolClient> })[CHECKED_OUT] = checkedOut;
  pool.on('acquire', (client) => checkedOut.add(client));
  pool.on('release', (_error, client) => checkedOut.delete(client));
  pool.on('error', (error: Error) => {
    logger.warn({ code: sqlState(error), reason: oneLine(error.message) }, 'idle database connection failed');
  });
  pool.on('connect', (client) => {
    client.on('error', (error: Error) => {
      logger.debug({ code: sqlState(error), reason: oneLine(error.message) }, 'database connection lost');
    });
  });
  return pool;
}

/**
 * Ends a pool made by createPool. pg's end waits for every connection checked out to come back; one that never
 * will (a bug: its holder lost it) would make that wait endless, and once its socket is gone the process would
 * exit mid-await with its outcome unsaid. Such a connection is closed instead, the error logged, and the pool's
 * end not waited for.
 */
export async function closePool(pool: pg.Pool, logger: Logger): Promise<void> {
  const checkedOut = (pool as { [CHECKED_OUT]?: Set<pg.PoolClient> })[CHECKED_OUT];
  if (checkedOut === undefined || checkedOut.size === 0) {
    await pool.end();
    return;
  }
  logger.error(
    { connections: checkedOut.size },
    'database connections still checked out when the pool closed: closing them (a bug in the connector)',
  );
  // Not released: a holder that does hand one back later would release it twice, which pg throws on.
  await Promise.all([...checkedOut].map((client) => client.end().catch(() => {})));
  pool.end().catch(() => {});
}

type TransactionBody<T> = (client: pg.PoolClient) => Promise<T>;

/** How withTransaction runs: its abort signal, and what opens the transaction. */
export interface TransactionOptions {
  readonly signal?: AbortSignal | undefined;
  /**
   * The statements that open it (default BEGIN): BEGIN and its SET LOCALs in one round trip. Null: `fn` sends
   * them itself with its first statements (a StatementPipeline's), so that they leave without a round trip of
   * their own.
   */
  readonly begin?: string | null;
}

/**
 * Runs `fn` inside BEGIN/COMMIT on one pooled connection. On any error the transaction is rolled back; a
 * connection that cannot even roll back (killed, protocol broken by an aborted COPY) is destroyed, not reused.
 * When `signal` aborts, the statement running on the connection is cancelled (a lock wait included), the
 * transaction is rolled back even if `fn` completes, and the error is an abort (see isAbortError). The signal
 * comes before `fn` so that the callback stays the last argument.
 */
export async function withTransaction<T>(
  pool: pg.Pool,
  options: AbortSignal | TransactionOptions | undefined,
  fn: TransactionBody<T>,
): Promise<T> {
  const { signal, begin = 'BEGIN' } =
    options === undefined || options instanceof AbortSignal ? { signal: options } : options;
  if (signal?.aborted) throw abortError(signal, signal.reason);
  const client = await pool.connect();
  // A connection killed while checked out emits 'error' on the client; without a listener that would crash.
  // The error it carries (idle_in_transaction_session_timeout, a terminated backend) says more than the
  // "not queryable" error of the statement that follows.
  let connectionError: Error | undefined;
  const onError = (error: Error): void => {
    connectionError ??= error;
  };
  client.on('error', onError);
  const canceller = signal ? new StatementCanceller(pool, client, signal) : undefined;
  let broken: Error | boolean | undefined;
  try {
    if (begin !== null) await client.query(begin);
    let result: T;
    try {
      result = await fn(client);
    } finally {
      // No cancel may be in flight once the connection runs ROLLBACK or COMMIT, or goes back to the pool.
      if (await canceller?.stop()) broken = true;
    }
    if (signal?.aborted) throw abortError(signal, signal.reason);
    await client.query('COMMIT');
    return result;
  } catch (error) {
    if (await canceller?.stop()) broken = true;
    if (!broken) {
      try {
        await client.query('ROLLBACK');
      } catch (rollbackError) {
        broken = rollbackError instanceof Error ? rollbackError : new Error(String(rollbackError));
      }
    }
    if (signal?.aborted) throw isAbortError(error) ? error : abortError(signal, error);
    throw connectionError !== undefined && !answeredByServer(error) ? connectionError : error;
  } finally {
    client.off('error', onError);
    client.release(broken);
  }
}

/** A cancel that lands between two statements is lost; it is repeated until the transaction's work ends. */
const CANCEL_REPEAT_MS = 200;
/** A statement that ignores cancels this long (a backend stuck outside an interruptible wait) is terminated. */
const TERMINATE_AFTER_MS = 3000;

/**
 * Cancels what a checked-out connection runs once a signal aborts. It connects on its own rather than through the
 * pool: the pool may be full of connections that wait, on the very locks that make the cancel necessary. It
 * signals only the backend the session read of itself (Backend): the server the name reaches now may be another
 * (a failover), and the pid another session's (this one's backend ended), such as another run's lock session.
 */
class StatementCanceller {
  readonly #pool: pg.Pool;
  readonly #client: pg.PoolClient;
  readonly #signal: AbortSignal;
  readonly #stopped: Promise<void>;
  #stop: () => void = () => {};
  #done = false;
  #running: Promise<boolean> | undefined;

  constructor(pool: pg.Pool, client: pg.PoolClient, signal: AbortSignal) {
    this.#pool = pool;
    this.#client = client;
    this.#signal = signal;
    this.#stopped = new Promise((resolve) => {
      this.#stop = resolve;
    });
    signal.addEventListener('abort', this.#onAbort, { once: true });
    if (signal.aborted) this.#onAbort();
  }

  /**
   * Ends the cancelling; resolves once no cancel is in flight, to true if the session was ended (its backend
   * terminated, or the session closed: its backend was gone).
   */
  async stop(): Promise<boolean> {
    this.#done = true;
    this.#stop();
    this.#signal.removeEventListener('abort', this.#onAbort);
    return (await this.#running) ?? false;
  }

  readonly #onAbort = (): void => {
    if (!this.#done && this.#running === undefined) this.#running = this.#cancelUntilStopped();
  };

  async #cancelUntilStopped(): Promise<boolean> {
    const backend = backendOf(this.#client);
    // A backend it cannot tell from another session's is never signalled: the session's deadlines still end it.
    if (backend?.startedAt == null || backend.serverStartedAt == null) return false;
    const own = [backend.pid, backend.startedAt, backend.serverStartedAt];
    const admin = new pg.Client({
      ...this.#pool.options,
      // Named apart from the run's own sessions (whose names start with the connector's), and within 63 bytes.
      application_name: `(cancel) ${this.#pool.options.application_name ?? 'post-reports-etl'}`.slice(0, 63),
    });
    admin.on('error', () => {});
    try {
      await admin.connect();
      const started = Date.now();
      while (!this.#done) {
        if (Date.now() - started >= TERMINATE_AFTER_MS) {
          return (await admin.query(terminateOwnBackend, own)).rows.length > 0;
        }
        // No row: the pid is no longer this session's backend (it ended, or the name now reaches another server).
        // Nothing there can end its wait: the session is closed from this side, and the transaction ends now.
        if ((await admin.query(cancelOwnBackend, own)).rows.length === 0) {
          this.#client.end().catch(() => {});
          return true;
        }
        await Promise.race([this.#stopped, sleep(CANCEL_REPEAT_MS, undefined, { ref: false })]);
      }
      return false;
    } catch {
      // The server cannot be reached to cancel: statement_timeout and lock_timeout still end the wait.
      return false;
    } finally {
      admin.end().catch(() => {});
    }
  }
}

/** Where createPool keeps the backend each session read of itself when it connected. */
const BACKEND = Symbol('post-reports-etl backend');

/**
 * A session's server backend as it read itself when it connected (readOwnBackend): the pid alone names another
 * session once this one's backend ended, or on another server after a failover; with when the backend and its
 * server started, it names this one only. Null times: not read (a pooler that hides pg_stat_activity).
 */
export interface Backend {
  readonly pid: number;
  readonly startedAt: string | null;
  readonly serverStartedAt: string | null;
}

interface BackendRow {
  pid: unknown;
  started: string | null;
  server_started: string | null;
}

/** Records the backend a session runs on (createPool does, as each session connects). */
export function rememberBackend(client: pg.ClientBase, backend: Backend): void {
  (client as { [BACKEND]?: Backend })[BACKEND] = backend;
}

/** The backend a pooled session read of itself when it connected; undefined if it did not. */
export function backendOf(client: pg.ClientBase): Backend | undefined {
  return (client as { [BACKEND]?: Backend })[BACKEND];
}

/**
 * The server backend a pooled session runs on: as the session read it when it connected, else pg's processID
 * (from the server's BackendKeyData; a pooler such as PgBouncer sends its own there, no backend's).
 */
export function backendPid(client: pg.ClientBase): number | undefined {
  const read = backendOf(client)?.pid;
  if (read !== undefined) return read;
  // @types/pg does not declare processID.
  const pid: unknown = (client as { processID?: unknown }).processID;
  return typeof pid === 'number' && pid > 0 ? pid : undefined;
}

function abortError(signal: AbortSignal, cause: unknown): Error {
  const reason: unknown = signal.reason;
  const error = new Error(reason instanceof Error ? reason.message : 'aborted', { cause });
  error.name = 'AbortError';
  return error;
}

/**
 * Wraps a database failure in a StoreError('DB_ERROR') whose one-line message names the operation, keeps the
 * SQLSTATE and, for a deadline that fired, names the setting; an abort becomes StoreError('ABORTED'); connector
 * errors pass through unchanged.
 */
export function asStoreError(operation: string, error: unknown): EtlError {
  if (error instanceof EtlError) return error;
  if (isAbortError(error)) return new StoreError('ABORTED', `${operation} aborted`, { cause: error });
  const state = sqlState(error);
  const reason = error instanceof Error ? error.message : String(error);
  return new StoreError(
    'DB_ERROR',
    oneLine(`${operation} failed${state ? ` (${state})` : ''}: ${reason}${deadlineHint(error)}`),
    { cause: error },
  );
}

/** The setting whose deadline ended the statement or connection (databaseDeadline), as a suffix for its message. */
const DEADLINE_HINTS: { readonly [D in DatabaseDeadline]: string } = {
  lock: ` (waited for a lock held by another session longer than ${SETTINGS.lockTimeoutMs.env})`,
  statement: ` (the statement ran longer than ${SETTINGS.statementTimeoutMs.env})`,
  'idle in transaction': ` (a transaction stayed idle longer than ${SETTINGS.idleInTransactionTimeoutMs.env})`,
  connect: ` (no connection within ${SETTINGS.connectTimeoutMs.env})`,
};

/** Which of the connector's database deadlines an error comes from, as a suffix for its message ('' if none). */
export function deadlineHint(error: unknown): string {
  const deadline = databaseDeadline(error);
  return deadline === undefined ? '' : DEADLINE_HINTS[deadline];
}
