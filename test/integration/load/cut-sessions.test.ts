import type pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { closePool, createPool } from '../../../src/load/database.js';
import { acquireRunLock, schemaLockScope } from '../../../src/load/locks.js';
import { migrate } from '../../../src/load/migrate.js';
import { schemaEpoch } from '../../../src/load/schema-epoch.js';
import { WindowClaims } from '../../../src/load/window-claims.js';
import { Secret } from '../../../src/secret.js';
import { type CuttingProxy, startCuttingProxy } from '../../helpers/cutting-proxy.js';
import { createTestDatabase } from '../../helpers/database.js';
import { captureLogger, target } from './load-fixtures.js';

/*
 * A session the server ends while one of its queries is in flight (a killed backend, a failover, an idle cut):
 * whoever asked for the connection hands it back, at whatever moment the cut lands. A connection nobody hands back
 * is one the pool never lends again, and one that a closing pool waits for forever.
 */
const db = await createTestDatabase();
const log = captureLogger();
const server = new URL(db.url);
const proxy: CuttingProxy = await startCuttingProxy({ host: server.hostname, port: Number(server.port) });
const { schema } = target;
const scope = { schema, org: 'default' };
const week = { start: '2026-03-02', end: '2026-03-08' };

function cutPool(max = 3): pg.Pool {
  return createPool(
    {
      url: new Secret(proxy.urlThrough(db.url)),
      schema,
      organization: 'default',
      statementTimeoutMs: 60_000,
      lockWaitMs: 1000,
      partitionPeriod: 'year',
    },
    log.logger,
    { max, applicationName: 'cut-sessions-under-test' },
  );
}

/** Connections checked out of `pool` now. */
function checkedOut(pool: pg.Pool): number {
  return pool.totalCount - pool.idleCount;
}

const freshness = { madeSince: new Date('2026-01-01T00:00:00Z'), reloads: () => false };

beforeAll(async () => {
  await migrate(db.pool, target, log.logger);
});
afterAll(() => {
  proxy.close();
});

describe('a session cut with a query in flight', () => {
  it('the claims session, cut before it read its own pid, goes back to the pool; the next claim opens another', async () => {
    const pool = cutPool();
    try {
      const claims = new WindowClaims(pool, scope, log.logger, freshness);
      // The session is handed out, then cut on its first statement of the claims' own.
      pool.once('acquire', () => void proxy.cutNext());
      await expect(claims.start()).rejects.toThrow(/terminating connection due to administrator command/);
      expect(checkedOut(pool)).toBe(0);
      expect(await claims.claim([week])).toBe('claimed');
      const holders = await db.pool.query<{ n: number }>(
        `SELECT count(*)::int AS n FROM pg_locks WHERE locktype = 'advisory' AND granted AND pid = $1`,
        [claims.pid],
      );
      expect(holders.rows[0]?.n).toBe(1);
      await claims.close();
      expect(checkedOut(pool)).toBe(0);
    } finally {
      await closePool(pool, log.logger);
    }
  });

  it('the claims session, cut while it claims, is handed back; the claim is asked for again on a new session', async () => {
    const pool = cutPool();
    try {
      const claims = new WindowClaims(pool, scope, log.logger, freshness);
      await claims.start();
      const first = claims.pid;
      const cut = proxy.cutNext();
      expect(await claims.claim([week])).toBe('claimed');
      await cut;
      expect(claims.pid).not.toBe(first);
      expect(checkedOut(pool)).toBe(1);
      expect(await claims.holds([week])).toBe('claimed');
      await claims.close();
      expect(checkedOut(pool)).toBe(0);
    } finally {
      await closePool(pool, log.logger);
    }
  });

  it('a run lock whose session is cut while it is taken again hands that session back, and takes it on another', async () => {
    const pool = cutPool(4);
    try {
      let lost: () => void = () => {};
      const noticed = new Promise<void>((resolve) => {
        lost = resolve;
      });
      const lock = await acquireRunLock(pool, schemaLockScope(schema), 1000, {
        regain: { waitMs: 10_000, epoch: (c) => schemaEpoch(c, schema), onLost: () => lost() },
      });
      const first = lock.pid;
      // The lock's own session is ended with nothing in flight (as an idle cut); the first statement of the
      // session that takes the lock again is cut as well.
      let acquired = 0;
      pool.on('acquire', () => {
        if (acquired++ === 0) void proxy.cutNext();
      });
      await db.pool.query('SELECT pg_terminate_backend($1)', [first]);
      await noticed;
      await lock.held();
      expect(acquired).toBe(2);
      expect(lock.pid).not.toBe(first);
      expect(checkedOut(pool)).toBe(1);
      await lock.release();
      expect(checkedOut(pool)).toBe(0);
    } finally {
      await closePool(pool, log.logger);
    }
  });
});

describe('a pool closed with a connection still checked out', () => {
  it('closes it rather than waiting for it forever, and logs the error', async () => {
    const errors = captureLogger();
    const pool = cutPool();
    const leaked = await pool.connect();
    const pid = (await leaked.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0]?.pid;
    const live = await pool.connect();
    live.release();
    await closePool(pool, errors.logger);
    expect(errors.lines().filter((line) => line.level === 50)).toEqual([
      expect.objectContaining({ connections: 1, msg: expect.stringContaining('still checked out') }),
    ]);
    const left = await db.pool.query('SELECT 1 FROM pg_stat_activity WHERE pid = $1', [pid]);
    expect(left.rowCount).toBe(0);
  });
});
