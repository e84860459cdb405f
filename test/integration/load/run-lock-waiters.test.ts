/*
 * Processes that need the schema alone for the same migrations as another one before them (a fan-out starting on a
 * fresh schema) wait for that one to share the schema, ask again, and start together: none of them goes through
 * the queue of those who need the schema alone once nothing is left to do alone, and none proceeds before the
 * migrations are done.
 */
import pg from 'pg';
import { afterAll, describe, expect, it } from 'vitest';
import {
  acquireRunLock,
  aloneQueueKey,
  lockForSession,
  type RunLock,
  runLockKey,
  schemaLockScope,
  unlockSession,
} from '../../../src/load/locks.js';
import { createTestDatabase } from '../../helpers/database.js';
import { advisoryLockWaiters } from '../../helpers/lock-wait.js';

const db = await createTestDatabase();
const pools: pg.Pool[] = [];
afterAll(async () => {
  await Promise.all(pools.map((p) => p.end()));
});

function processPool(): pg.Pool {
  const pool = new pg.Pool({ connectionString: db.url, max: 2 });
  pool.on('error', () => {});
  pools.push(pool);
  return pool;
}

describe('waiting for the process before (run lock)', () => {
  it('starts every waiter at once when the one migrating shares the schema, without the alone queue', async () => {
    const schema = 'waiters';
    let pending: string | null = 'migration 009_example.sql';
    // The first process: in the alone queue and holding the schema alone, as while it migrates.
    const first = await db.pool.connect();
    await lockForSession(first, aloneQueueKey(schema));
    await lockForSession(first, runLockKey(schema));
    const got: RunLock[] = [];
    const waiters = Array.from({ length: 3 }, () =>
      acquireRunLock(processPool(), schemaLockScope(schema), 5_000, { alone: async () => pending }).then(
        (lock) => {
          got.push(lock);
          return lock;
        },
      ),
    );
    try {
      // Each waiter has asked for the schema and waits in PostgreSQL's queue behind the one migrating.
      expect(await advisoryLockWaiters(db.pool, runLockKey(schema), 3)).toHaveLength(3);
      expect(got).toEqual([]);
      // Its migrations done, it shares the schema but stays in the alone queue (as it would while another
      // process queued there behind it): the waiters need nothing alone any more, so they do not wait for it.
      pending = null;
      await first.query('SELECT pg_advisory_lock_shared(hashtextextended($1, 0))', [runLockKey(schema)]);
      await unlockSession(first, runLockKey(schema));
      const locks = await Promise.all(waiters);
      expect(locks.map((l) => l.mode)).toEqual(['shared', 'shared', 'shared']);
      await Promise.all(locks.map((l) => l.release()));
    } finally {
      await unlockSession(first, aloneQueueKey(schema));
      await first.query('SELECT pg_advisory_unlock_all()');
      first.release();
    }
  });

  it('queues for the schema alone when something is still to do alone once the one before shares it', async () => {
    const schema = 'still_alone';
    const first = await db.pool.connect();
    await lockForSession(first, aloneQueueKey(schema));
    await lockForSession(first, runLockKey(schema));
    // A reset: still to do alone after the one before shared the schema.
    const waiter = acquireRunLock(processPool(), schemaLockScope(schema), 30_000, {
      alone: async () => '--reset',
    });
    let mode: string | undefined;
    const settled = waiter.then((lock) => {
      mode = lock.mode;
      return lock;
    });
    try {
      await first.query('SELECT pg_advisory_lock_shared(hashtextextended($1, 0))', [runLockKey(schema)]);
      await unlockSession(first, runLockKey(schema));
      // The first still shares the schema and holds the queue: the reset waits in the queue for it.
      expect(await advisoryLockWaiters(db.pool, aloneQueueKey(schema))).toHaveLength(1);
      expect(mode).toBeUndefined();
      await unlockSession(first, aloneQueueKey(schema));
      await first.query('SELECT pg_advisory_unlock_shared(hashtextextended($1, 0))', [runLockKey(schema)]);
      const lock = await settled;
      expect(lock.mode).toBe('exclusive');
      await lock.release();
    } finally {
      await first.query('SELECT pg_advisory_unlock_all()');
      first.release();
    }
  });
});
