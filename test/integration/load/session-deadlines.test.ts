import { setTimeout as sleep } from 'node:timers/promises';
import type pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type DbConfig, parseConfig, type RawSettings } from '../../../src/config.js';
import { isAbortError } from '../../../src/errors.js';
import { asStoreError, createPool, withTransaction } from '../../../src/load/database.js';
import { createTestDatabase } from '../../helpers/database.js';
import { lockWait } from '../../helpers/lock-wait.js';
import { startSilentServer } from '../../helpers/silent-server.js';
import { captureLogger } from './load-fixtures.js';

const db = await createTestDatabase();
const log = captureLogger();
const APP = 'deadlines-under-test';
const pools: pg.Pool[] = [];

/** The DbConfig parseConfig builds from these settings, as the CLI would. */
function dbConfig(settings: RawSettings = {}): DbConfig {
  return parseConfig({ DATABASE_URL: db.url, ...settings }, {}, { db: true }).db;
}

function pool(settings: RawSettings = {}, max = 2): pg.Pool {
  const created = createPool(dbConfig(settings), log.logger, { max, applicationName: APP });
  pools.push(created);
  return created;
}

async function show(on: pg.Pool, setting: string): Promise<string> {
  const { rows } = await on.query<Record<string, string>>(`SHOW ${setting}`);
  return Object.values(rows[0] ?? {})[0] ?? '';
}

/** Resolves once the server has ended backend `pid` (it is no longer in pg_stat_activity). */
async function backendGone(pid: number): Promise<void> {
  for (;;) {
    const { rows } = await db.pool.query<{ n: number }>(
      'SELECT count(*)::int AS n FROM pg_stat_activity WHERE pid = $1',
      [pid],
    );
    if (rows[0]?.n === 0) return;
    await sleep(20);
  }
}

/** Holds an ACCESS EXCLUSIVE lock on `held` from another session until the returned release is called. */
async function holdLock(): Promise<() => Promise<void>> {
  const holder = await db.pool.connect();
  await holder.query('BEGIN');
  await holder.query('LOCK TABLE held IN ACCESS EXCLUSIVE MODE');
  return async () => {
    await holder.query('ROLLBACK');
    holder.release();
  };
}

/** statement_timeout, lock_timeout and idle_in_transaction_session_timeout of a session of the pool. */
async function deadlines(p: pg.Pool): Promise<string[]> {
  const names = ['statement_timeout', 'lock_timeout', 'idle_in_transaction_session_timeout'];
  return Promise.all(names.map((name) => show(p, name)));
}

async function failure(promise: Promise<unknown>): Promise<unknown> {
  return promise.then(
    () => expect.unreachable('expected a failure'),
    (error: unknown) => error,
  );
}

beforeAll(async () => {
  await db.pool.query('CREATE TABLE held (id int)');
});
afterAll(async () => {
  for (const p of pools) await p.end();
});

describe("the connector's sessions", () => {
  it('run with the default deadlines', async () => {
    const p = pool();
    expect(await deadlines(p)).toEqual(['10min', '2min', '1min']);
    expect(await show(p, 'application_name')).toBe(APP);
  });

  it('run with the configured deadlines; 0 leaves the server its own (no limit)', async () => {
    const p = pool({
      POST_REPORTS_STATEMENT_TIMEOUT_MS: '45000',
      POST_REPORTS_LOCK_TIMEOUT_MS: '7000',
      POST_REPORTS_IDLE_IN_TRANSACTION_TIMEOUT_MS: '8000',
    });
    expect(await deadlines(p)).toEqual(['45s', '7s', '8s']);
    const none = pool({
      POST_REPORTS_STATEMENT_TIMEOUT_MS: '0',
      POST_REPORTS_LOCK_TIMEOUT_MS: '0',
      POST_REPORTS_IDLE_IN_TRANSACTION_TIMEOUT_MS: '0',
    });
    expect(await deadlines(none)).toEqual(['0', '0', '0']);
  });
});

describe('a deadline that fires names its setting', () => {
  it('lock_timeout: a lock held by another session', async () => {
    const p = pool({ POST_REPORTS_LOCK_TIMEOUT_MS: '200' });
    const release = await holdLock();
    try {
      const error = await failure(
        withTransaction(p, undefined, (client) => client.query('LOCK TABLE held IN SHARE MODE')),
      );
      const wrapped = asStoreError('locking held', error);
      expect(wrapped.code).toBe('DB_ERROR');
      expect(wrapped.message).toBe(
        'locking held failed (55P03): canceling statement due to lock timeout (waited for a lock held by another session longer than POST_REPORTS_LOCK_TIMEOUT_MS)',
      );
    } finally {
      await release();
    }
  });

  it('statement_timeout', async () => {
    const p = pool({ POST_REPORTS_STATEMENT_TIMEOUT_MS: '200' });
    const error = await failure(p.query('SELECT pg_sleep(30)'));
    expect(asStoreError('sleeping', error).message).toBe(
      'sleeping failed (57014): canceling statement due to statement timeout (the statement ran longer than POST_REPORTS_STATEMENT_TIMEOUT_MS)',
    );
  });

  it('idle_in_transaction_session_timeout', async () => {
    const p = pool({ POST_REPORTS_IDLE_IN_TRANSACTION_TIMEOUT_MS: '200' });
    const error = await failure(
      withTransaction(p, undefined, async (client) => {
        const { rows } = await client.query<{ pid: number }>('SELECT pg_backend_pid() AS pid');
        // The server ends the session meanwhile (seen gone from another session); the next statement finds it gone.
        await backendGone(rows[0]?.pid ?? 0);
        await client.query('SELECT 1');
      }),
    );
    expect(asStoreError('idling', error).message).toMatch(
      /^idling failed \(25P03\): terminating connection due to idle-in-transaction timeout \(a transaction stayed idle longer than POST_REPORTS_IDLE_IN_TRANSACTION_TIMEOUT_MS\)$/,
    );
    // The pool replaced the dead connection.
    expect(await show(p, 'application_name')).toBe(APP);
  });

  it('the connect timeout: a server that never answers, and a pool with no free connection', async () => {
    const silent = await startSilentServer();
    const { port } = silent;
    try {
      const config = parseConfig(
        {
          DATABASE_URL: `postgres://nobody@127.0.0.1:${port}/silent`,
          POST_REPORTS_CONNECT_TIMEOUT_MS: '200',
        },
        {},
        { db: true },
      ).db;
      const p = createPool(config, log.logger, { max: 1 });
      pools.push(p);
      const error = await failure(p.query('SELECT 1'));
      expect(asStoreError('connecting', error).message).toBe(
        'connecting failed: Connection terminated due to connection timeout (no connection within POST_REPORTS_CONNECT_TIMEOUT_MS)',
      );
    } finally {
      silent.close();
    }

    const busy = pool({ POST_REPORTS_CONNECT_TIMEOUT_MS: '200' }, 1);
    const taken = await busy.connect();
    try {
      const error = await failure(busy.query('SELECT 1'));
      expect(asStoreError('waiting', error).message).toBe(
        'waiting failed: timeout exceeded when trying to connect (no connection within POST_REPORTS_CONNECT_TIMEOUT_MS)',
      );
    } finally {
      taken.release();
    }
  });
});

describe('withTransaction with a signal', () => {
  // lock_timeout 0: without the cancel, these waits would only end with the test's own timeout.
  const settings = { POST_REPORTS_LOCK_TIMEOUT_MS: '0' };

  it('cancels a lock wait on abort, rolls back, and gives the connection back to the pool', async () => {
    const p = pool(settings);
    const release = await holdLock();
    const controller = new AbortController();
    try {
      const outcome = failure(
        withTransaction(p, controller.signal, async (client) => {
          await client.query('CREATE TABLE written (id int)');
          await client.query('LOCK TABLE held IN SHARE MODE');
        }),
      );
      await lockWait(db.pool, APP);
      controller.abort(new Error('interrupted by SIGTERM'));
      const error = await outcome;
      expect(isAbortError(error)).toBe(true);
      expect(asStoreError('locking held', error)).toMatchObject({
        code: 'ABORTED',
        message: 'locking held aborted',
      });
    } finally {
      await release();
    }
    const { rows } = await p.query<{ gone: boolean }>(`SELECT to_regclass('written') IS NULL AS gone`);
    expect(rows).toEqual([{ gone: true }]);
    expect(
      await withTransaction(p, undefined, async (client) => (await client.query('SELECT 1 AS one')).rows),
    ).toEqual([{ one: 1 }]);
  });

  it('cancels a statement that starts after a cancel was lost between two statements', async () => {
    const p = pool(settings);
    const release = await holdLock();
    const controller = new AbortController();
    try {
      const error = await failure(
        withTransaction(p, controller.signal, async (client) => {
          await client.query('SELECT 1');
          controller.abort(new Error('stop'));
          // The first cancel arrives while the session is idle: PostgreSQL ignores it.
          await sleep(500);
          await client.query('LOCK TABLE held IN SHARE MODE');
        }),
      );
      expect(isAbortError(error)).toBe(true);
    } finally {
      await release();
    }
  });

  it('rolls back work that completes after the abort', async () => {
    const p = pool(settings);
    const controller = new AbortController();
    const error = await failure(
      withTransaction(p, controller.signal, async (client) => {
        await client.query('CREATE TABLE late (id int)');
        controller.abort(new Error('stop'));
      }),
    );
    expect(isAbortError(error)).toBe(true);
    const { rows } = await p.query<{ gone: boolean }>(`SELECT to_regclass('late') IS NULL AS gone`);
    expect(rows).toEqual([{ gone: true }]);
  });

  it('terminates a session whose statement ignores the cancels', async () => {
    const p = pool(settings);
    const controller = new AbortController();
    let pid = 0;
    const error = await failure(
      withTransaction(p, controller.signal, async (client) => {
        pid = (await client.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0]?.pid ?? 0;
        const stubborn = client.query(
          'DO $$ BEGIN LOOP BEGIN PERFORM pg_sleep(0.1); EXCEPTION WHEN query_canceled THEN NULL; END; END LOOP; END $$',
        );
        await sleep(100);
        controller.abort(new Error('stop'));
        await stubborn;
      }),
    );
    expect(isAbortError(error)).toBe(true);
    // The backend exits once it has seen the signal; the loop only waits for that (up to 20 s: a loaded server
    // may take seconds to schedule the dying backend).
    let alive = true;
    for (let i = 0; i < 400 && alive; i++) {
      const { rows } = await db.pool.query('SELECT 1 FROM pg_stat_activity WHERE pid = $1', [pid]);
      alive = rows.length > 0;
      if (alive) await sleep(50);
    }
    expect(alive).toBe(false);
    expect(await show(p, 'application_name')).toBe(APP);
  });
});
