import pg from 'pg';
import { afterAll, describe, expect, it } from 'vitest';
import { parseConfig } from '../../../src/config.js';
import { isAbortError } from '../../../src/errors.js';
import {
  type Backend,
  backendOf,
  createPool,
  rememberBackend,
  withTransaction,
} from '../../../src/load/database.js';
import { createTestDatabase } from '../../helpers/database.js';
import { lockWait } from '../../helpers/lock-wait.js';
import { captureLogger } from './load-fixtures.js';

const db = await createTestDatabase();
const log = captureLogger();
const APP = 'own-backend-under-test';
const STRANGER = 'own-backend-stranger';
const clients: pg.Client[] = [];
const pools: pg.Pool[] = [];
afterAll(async () => {
  for (const client of clients) await client.end().catch(() => {});
  for (const pool of pools) await pool.end().catch(() => {});
});

async function session(applicationName: string): Promise<pg.Client> {
  const client = new pg.Client({ connectionString: db.url, application_name: applicationName });
  clients.push(client);
  await client.connect();
  return client;
}

interface Stranger {
  readonly backend: Backend;
  /** 'granted', or the error its wait ended with (a cancel, a termination). */
  readonly outcome: Promise<unknown>;
  /** Lets go of the lock it waits for. */
  release(): Promise<void>;
}

/** Another session of the same role waiting on an advisory lock: what another run's lock session does. */
async function waitingStranger(key: number): Promise<Stranger> {
  const holder = await session('own-backend-holder');
  await holder.query('SELECT pg_advisory_lock($1)', [key]);
  const stranger = await session(STRANGER);
  const { rows } = await stranger.query<{ pid: number; started: string; server: string }>(
    `SELECT pid, extract(epoch FROM backend_start)::text AS started,
            extract(epoch FROM pg_postmaster_start_time())::text AS server
       FROM pg_stat_activity WHERE pid = pg_backend_pid()`,
  );
  const row = rows[0]!;
  const outcome = stranger.query('SELECT pg_advisory_lock($1)', [key]).then(
    () => 'granted',
    (error: unknown) => error,
  );
  await lockWait(db.pool, STRANGER);
  return {
    backend: { pid: row.pid, startedAt: row.started, serverStartedAt: row.server },
    outcome,
    release: async () => {
      await holder.query('SELECT pg_advisory_unlock($1)', [key]);
    },
  };
}

describe('the statement canceller signals only its own backend', () => {
  const cases: { name: string; recorded: (own: Backend, stranger: Backend) => Backend }[] = [
    {
      // The session's backend ended and its pid went to another session of the same role.
      name: 'a recorded pid now another backend (its backend_start differs)',
      recorded: (own, stranger) => ({ ...own, pid: stranger.pid }),
    },
    {
      // A failover: the name reaches another server, where the pid may be anyone's.
      name: 'a recorded backend of another server (its start differs)',
      recorded: (_own, stranger) => ({ ...stranger, serverStartedAt: '0' }),
    },
  ];
  for (const [i, c] of cases.entries()) {
    it(`${c.name}: the other session is not signalled, and the aborted transaction ends`, async () => {
      const key = 4100 + i;
      const blocker = await session('own-backend-blocker');
      await blocker.query('SELECT pg_advisory_lock($1)', [key + 100]);
      const stranger = await waitingStranger(key);
      const pool = createPool(
        parseConfig({ DATABASE_URL: db.url, POST_REPORTS_LOCK_TIMEOUT_MS: '0' }, {}, { db: true }).db,
        log.logger,
        {
          max: 1,
          applicationName: APP,
        },
      );
      pools.push(pool);
      const controller = new AbortController();
      const outcome = withTransaction(pool, controller.signal, async (client) => {
        const own = backendOf(client);
        expect(own?.startedAt).toEqual(expect.any(String));
        rememberBackend(client, c.recorded(own!, stranger.backend));
        const wait = client.query('SELECT pg_advisory_lock($1)', [key + 100]);
        await lockWait(db.pool, APP);
        controller.abort(new Error('stop'));
        await wait;
      }).then(
        () => 'committed',
        (error: unknown) => error,
      );
      const first = await Promise.race([outcome, stranger.outcome.then(() => 'the stranger was signalled')]);
      expect(isAbortError(first)).toBe(true);
      // Its wait was never cancelled, its session never ended: once the holder lets go, its lock is granted.
      await stranger.release();
      expect(await stranger.outcome).toBe('granted');
      await blocker.query('SELECT pg_advisory_unlock($1)', [key + 100]);
    });
  }
});
