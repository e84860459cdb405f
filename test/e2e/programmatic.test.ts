import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  backfill,
  createLogger,
  EtlError,
  EXIT,
  type ProgressEvent,
  parseConfig,
  type RunSummary,
  sync,
} from '../../src/index.js';
import { type RunningSimulator, startSimulator } from '../../src/simulator/server.js';
import { createTestDatabase } from '../helpers/database.js';
import { compareWithReference } from '../helpers/reference-check.js';
import { testNow } from '../helpers/today.js';

const db = await createTestDatabase();
let sim: RunningSimulator;

beforeAll(async () => {
  // 200 posts a day: several pages a window, so that a run is still staging when the test aborts it.
  sim = await startSimulator({ seed: 21, postsPerDay: 200, generationDelayMs: 100 });
});
afterAll(async () => {
  await sim.close();
});

function config(schema: string) {
  // The settings an orchestrator would pass: an explicit record, not the process environment.
  return parseConfig({
    POST_REPORTS_BASE_URL: sim.baseUrl,
    POST_REPORTS_TOKEN: sim.token,
    DATABASE_URL: db.url,
    POST_REPORTS_SCHEMA: schema,
    POST_REPORTS_CONCURRENCY: '2',
    POST_REPORTS_POLL_INITIAL_MS: '20',
    POST_REPORTS_POLL_MAX_MS: '100',
    POST_REPORTS_RETRY_MIN_DELAY_MS: '10',
    POST_REPORTS_LOCK_WAIT_MS: '0',
    POST_REPORTS_NOW: testNow(),
  });
}

const logger = createLogger({ level: 'silent' });

/** The loaded data of a schema (not its run bookkeeping, report_windows, which records the aborted attempt). */
async function dataSnapshot(schema: string, without: readonly string[] = []): Promise<string> {
  const s = pg.escapeIdentifier(schema);
  const parts: string[] = [];
  for (const table of ['posts', 'post_custom_segments', 'sync_state']) {
    const { rows } = await db.pool.query<{ doc: string }>(
      `SELECT (to_jsonb(t) - $1::text[])::text AS doc FROM ${s}.${pg.escapeIdentifier(table)} t ORDER BY 1`,
      [without],
    );
    parts.push(`${table}: ${rows.map((r) => r.doc).join('\n')}`);
  }
  return parts.join('\n\n');
}

/**
 * Runs a reload that is aborted at its first staged page, while the simulator holds every later page; the outcome
 * is a summary or an ABORTED rejection.
 */
async function abortedReload(schema: string): Promise<RunSummary | EtlError> {
  const controller = new AbortController();
  const events: ProgressEvent[] = [];
  const gate = sim.holdAnswers('page', 1);
  try {
    return await backfill({
      config: config(schema),
      logger,
      signal: controller.signal,
      onProgress(event) {
        events.push(event);
        if (event.type === 'page-staged') controller.abort(new EtlError('ABORTED', 'stopped by the test'));
      },
      from: '2026-01-05',
      to: '2026-02-01',
      reload: true,
    });
  } catch (error) {
    if (error instanceof EtlError) return error;
    throw error;
  } finally {
    gate.release();
    expect(events.some((e) => e.type === 'page-staged')).toBe(true);
  }
}

function expectInterrupted(outcome: RunSummary | EtlError): void {
  if (outcome instanceof EtlError) {
    expect(outcome.code).toBe('ABORTED');
    return;
  }
  expect(outcome.status).toBe('interrupted');
  expect(outcome.exitCode).toBe(EXIT.interrupted);
}

describe("the programmatic API (import { backfill, sync } from 'post-reports-etl')", () => {
  it('loads with progress events, then an aborted reload leaves the loaded tables exactly as they were', async () => {
    const events: ProgressEvent[] = [];
    const summary = await backfill({
      config: config('prog'),
      logger,
      onProgress: (event) => events.push(event),
      from: '2026-01-05',
      to: '2026-02-01',
    });
    expect(summary).toMatchObject({
      command: 'backfill',
      status: 'succeeded',
      exitCode: EXIT.ok,
      posts: 28 * 200,
    });
    expect(summary.windows).toMatchObject({ planned: 4, loaded: 4, failed: 0 });
    expect(events[0]).toEqual({ type: 'planned', windows: 4, skipped: 0 });
    expect(events.filter((e) => e.type === 'window-loaded').length).toBe(4);
    const staged = events.reduce((n, e) => n + (e.type === 'page-staged' ? e.posts : 0), 0);
    expect(staged).toBe(28 * 200);

    const before = await dataSnapshot('prog');
    expectInterrupted(await abortedReload('prog'));
    expect(await dataSnapshot('prog')).toBe(before);

    // The run lock was released: the next run loads again, and the data is the same but for its report and time.
    const loadMarks = ['_report_id', '_loaded_at'];
    const content = await dataSnapshot('prog', loadMarks);
    const again = await backfill({
      config: config('prog'),
      logger,
      from: '2026-01-05',
      to: '2026-01-18',
      reload: true,
    });
    expect(again.status).toBe('succeeded');
    expect(await dataSnapshot('prog', loadMarks)).toBe(content);
  });

  it('an aborted first load leaves no posts behind', async () => {
    expectInterrupted(await abortedReload('prog_fresh'));
    const { rows } = await db.pool.query<{ n: string }>('SELECT count(*) AS n FROM prog_fresh.posts');
    expect(rows[0]?.n).toBe('0');
  });

  it('sync takes the same options and moves the cursor', async () => {
    const summary = await sync({
      config: parseConfig({
        POST_REPORTS_BASE_URL: sim.baseUrl,
        POST_REPORTS_TOKEN: sim.token,
        DATABASE_URL: db.url,
        POST_REPORTS_SCHEMA: 'prog_sync',
        POST_REPORTS_START_DATE: '2026-03-02',
        POST_REPORTS_POLL_INITIAL_MS: '20',
        POST_REPORTS_NOW: testNow(),
      }),
      logger,
      today: '2026-03-08',
    });
    expect(summary).toMatchObject({
      command: 'sync',
      status: 'succeeded',
      cursor: '2026-03-08',
      posts: 7 * 200,
    });
    // The tables hold exactly the simulator's posts of those dates, not merely as many as the summary says.
    const reference = sim.referencePosts({ start_date: '2026-03-02', end_date: '2026-03-08' });
    const check = await compareWithReference(db.pool, 'prog_sync', reference);
    expect(check.problems).toEqual([]);
    expect(check.posts).toBe(reference.length);
  });
});
