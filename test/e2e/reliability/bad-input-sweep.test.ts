/*
 * Issue 7 part 3, the bad-input sweep: every malformed page and record the simulator can serve, against the
 * built CLI. A window is loaded first; each bad input then comes with a --reload of that window and must end in
 * a defined outcome: either the window fails (exit 3) with one stderr line naming the window (and the page),
 * the loaded data left exactly as it was, or a documented repair loads it. A clean run must then still load
 * the simulator's reference exactly.
 */
import { createHash } from 'node:crypto';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { CORRUPTION_KINDS } from '../../../src/simulator/faults.js';
import { CORRUPT_VALUES, HUGE_STRING_MIN_LENGTH, hugeStringValue } from '../../../src/simulator/page-body.js';
import {
  type CorruptionKind,
  type Faults,
  type RunningSimulator,
  type SimulatorPost,
  startSimulator,
} from '../../../src/simulator/server.js';
import { type CliResult, runCli, startCli } from '../../helpers/cli.js';
import { createTestDatabase } from '../../helpers/database.js';
import { cliEnv } from '../../helpers/e2e-env.js';
import { compareWithReference, snapshotSchema } from '../../helpers/reference-check.js';

const db = await createTestDatabase();
const SCHEMA = 'sweep';
// One ISO week is one window (the default 7-day grid) and, at 4 posts a day, one page of 28 posts.
const WINDOW = { start: '2026-03-02', end: '2026-03-08' } as const;
const W = `${WINDOW.start}..${WINDOW.end}`;
const W_PATTERN = W.replaceAll('.', '\\.');
// Two attempts show that a failure is retried, without the default's 3 s of back-off between three.
const ATTEMPTS = 2;
// Tables holding what was loaded. report_windows records every attempt and stage_* the unfinished stages,
// so those change on a failed run by design; snapshotSchema's first part alone would be field_columns only.
const LOADED_TABLES = ['field_columns', 'post_custom_segments', 'posts', 'schema_migrations', 'sync_state'];
const CLEAN: Partial<Faults> = { corruptPages: null, reportStatusOverride: null };

let sim: RunningSimulator;

beforeAll(async () => {
  // A bad record is placed by its position in the page, and the expected rows name it by the reference's order:
  // every reading of the window's report (each --reload is one) serves that order. Another order on a second
  // reading has tests of its own (the simulator's service shapes, the page faults).
  sim = await startSimulator({ seed: 5, postsPerDay: 4, shapes: { rereadOrder: 'same' } });
  const first = await runCli(
    ['backfill', '--from', WINDOW.start, '--to', WINDOW.end, '--schema', SCHEMA],
    cliEnv(sim, db.url),
  );
  expect(first.code).toBe(0);
  await expectReference();
});
afterEach(() => sim.setFaults(CLEAN));
afterAll(async () => {
  await sim.close();
});

function reference(): SimulatorPost[] {
  return sim.referencePosts({ start_date: WINDOW.start, end_date: WINDOW.end });
}

async function expectReference(expected: readonly SimulatorPost[] = reference()): Promise<void> {
  const check = await compareWithReference(db.pool, SCHEMA, expected);
  expect(check.problems).toEqual([]);
  expect(check.posts).toBe(expected.length);
}

/** Past the API's reuse period (3 h): an identical request gets a new report. */
const REUSE_PASSED_MS = 4 * 3_600_000;

/**
 * A reload of the window; `attempts` per window. `pastReuseOnRetry`: the API hands a failed report back within
 * its reuse period, so the simulator's clock is moved past it while the window waits to retry.
 */
async function reload(
  env: Record<string, string> = {},
  attempts = ATTEMPTS,
  pastReuseOnRetry = false,
): Promise<CliResult> {
  const run = startCli(
    [
      'backfill',
      '--from',
      WINDOW.start,
      '--to',
      WINDOW.end,
      '--schema',
      SCHEMA,
      '--reload',
      '--window-attempts',
      String(attempts),
    ],
    cliEnv(sim, db.url, env),
  );
  if (pastReuseOnRetry) {
    // The first retry's wait (the one retry of ATTEMPTS).
    await run.waitForOutput('window attempt failed; retrying');
    sim.advanceTime(REUSE_PASSED_MS);
  }
  return run.done;
}

/** The loaded tables of the schema's snapshot, by name. */
async function loadedData(): Promise<Record<string, string>> {
  const parts = (await snapshotSchema(db.pool, SCHEMA)).split('\n\n');
  const byTable: Record<string, string> = {};
  for (const part of parts) {
    const name = part.slice(0, part.indexOf(':'));
    if (LOADED_TABLES.includes(name)) byTable[name] = part;
  }
  expect(Object.keys(byTable).sort()).toEqual(LOADED_TABLES);
  return byTable;
}

interface WindowRow {
  status: string;
  attempts: number;
  row_count: string | null;
  last_error: string | null;
}

async function windowRow(): Promise<WindowRow> {
  const { rows } = await db.pool.query<WindowRow>(
    `SELECT status, attempts, row_count::text AS row_count, last_error FROM ${SCHEMA}.report_windows
      WHERE window_start = $1 AND window_end = $2`,
    [WINDOW.start, WINDOW.end],
  );
  expect(rows).toHaveLength(1);
  return rows[0] as WindowRow;
}

/** The lines the CLI prints for people (the rest of stderr is JSON log lines). */
function messageLines(stderr: string): string[] {
  return stderr.split('\n').filter((line) => line.startsWith('post-reports-etl:'));
}

function logLines(stderr: string): Record<string, unknown>[] {
  return stderr
    .split('\n')
    .filter((line) => line.startsWith('{'))
    .map((line) => JSON.parse(line) as Record<string, unknown>);
}

function faultCount(name: string): number {
  return sim.stats().faults[name] ?? 0;
}

interface FailureExpectation {
  readonly code: string;
  /** Attempts the window must have made. */
  readonly attempts: number;
  /** --window-attempts of the run (default ATTEMPTS). */
  readonly windowAttempts?: number;
  readonly env?: Record<string, string>;
  /** The report fails: the simulator's clock passes the reuse period before the retry (see reload). */
  readonly pastReuseOnRetry?: boolean;
}

/**
 * Runs a reload under `faults` that must fail the window with `code` after `attempts` attempts, and checks the
 * defined outcome: exit 3, one stderr line naming the window, the summary and report_windows saying the same,
 * the window still counted as loaded with its previous rows, and the loaded tables unchanged.
 */
async function expectFailedReload(
  faults: Partial<Faults>,
  { code, attempts, windowAttempts = ATTEMPTS, env = {}, pastReuseOnRetry = false }: FailureExpectation,
): Promise<{ line: string; result: CliResult }> {
  const before = await loadedData();
  const rowBefore = await windowRow();
  sim.setFaults(faults);
  const result = await reload(env, windowAttempts, pastReuseOnRetry);
  sim.setFaults(CLEAN);
  expect(result.code).toBe(3);
  const lines = messageLines(result.stderr);
  expect(lines).toHaveLength(1);
  const line = lines[0] ?? '';
  expect(line).toMatch(new RegExp(`^post-reports-etl: window failed: ${W_PATTERN}: ${code}: `));
  expect(result.summary).toMatchObject({
    status: 'partial',
    exitCode: 3,
    windows: { planned: 1, loaded: 0, failed: 1 },
    posts: 0,
    failures: [{ start: WINDOW.start, end: WINDOW.end, code }],
  });
  const row = await windowRow();
  expect(row).toMatchObject({
    status: 'failed',
    attempts: rowBefore.attempts + attempts,
    row_count: rowBefore.row_count,
  });
  expect(line).toBe(`post-reports-etl: window failed: ${W}: ${code}: ${row.last_error}`);
  expect(await loadedData()).toEqual(before);
  return { line, result };
}

interface PageCase {
  readonly kind: CorruptionKind;
  readonly code: 'PAGE_MALFORMED' | 'RECORD_INVALID' | 'FIELD_TYPE_MISMATCH';
  /** What the line says after the code. */
  readonly says: RegExp;
  /** Window attempts made: 1 when the error is not retried. */
  readonly attempts: number;
}

const page1 = (report: string) => `report ${report}, page 1`;
const ANY_REPORT = '[0-9a-f-]{36}';

const pageCases: readonly PageCase[] = [
  {
    kind: 'data-not-array',
    code: 'PAGE_MALFORMED',
    says: new RegExp(`${page1(ANY_REPORT)}: data is an object, not an array$`),
    attempts: ATTEMPTS,
  },
  {
    kind: 'too-many-records',
    code: 'PAGE_MALFORMED',
    says: new RegExp(`${page1(ANY_REPORT)}: data holds 1001 posts, more than the 1000 a page may hold$`),
    attempts: ATTEMPTS,
  },
  {
    kind: 'missing-response-metadata',
    code: 'PAGE_MALFORMED',
    says: new RegExp(`${page1(ANY_REPORT)}: response_metadata is missing, not an array holding an object$`),
    attempts: ATTEMPTS,
  },
  {
    kind: 'next-page-not-string',
    code: 'PAGE_MALFORMED',
    says: new RegExp(
      `${page1(ANY_REPORT)}: response_metadata\\[0\\]\\.next_page is a number, not a page token or null$`,
    ),
    attempts: ATTEMPTS,
  },
  {
    // Not retried by the HTTP client (a 200 with a bad body is no transient status), but by the window.
    kind: 'truncated-json',
    code: 'PAGE_MALFORMED',
    says: new RegExp(
      `report ${ANY_REPORT}, .*answered 200 with invalid JSON \\(End of string '"' expected but reached end of input at position \\d+\\): \\{"id":`,
    ),
    attempts: ATTEMPTS,
  },
  {
    kind: 'html-200',
    code: 'PAGE_MALFORMED',
    says: new RegExp(
      `report ${ANY_REPORT}, .*answered 200 with invalid JSON \\(JSON value expected but got '<' at position 0\\): <!DOCTYPE html><html><head><title>Maintenance</title>`,
    ),
    attempts: ATTEMPTS,
  },
  {
    kind: 'record-without-id',
    code: 'RECORD_INVALID',
    says: new RegExp(`: record 1 of page 1 of window ${W_PATTERN}: post id is missing$`),
    attempts: ATTEMPTS,
  },
  {
    kind: 'non-integer-id',
    code: 'RECORD_INVALID',
    says: new RegExp(`: record 1 of page 1 of window ${W_PATTERN}: post id 12345\\.5 is not an integer$`),
    attempts: ATTEMPTS,
  },
  {
    // A type clash would fail again: not retried (src/pipeline/run.ts retryable).
    kind: 'wrong-type',
    code: 'FIELD_TYPE_MISMATCH',
    says: new RegExp(
      `: field "platform_asset_id" holds a string value in post \\d+ of window ${W_PATTERN} page \\d+, but its column is bigint: widen the column`,
    ),
    attempts: 1,
  },
  {
    // date_captured is documented as a date: its column is one, and a value that is none fails the window.
    kind: 'not-a-date',
    code: 'FIELD_TYPE_MISMATCH',
    says: new RegExp(
      `: field "date_captured" holds "not-a-date" in post \\d+ of window ${W_PATTERN} page 1, but its column is date: the API documents dates as YYYY-MM-DD$`,
    ),
    attempts: 1,
  },
];

// Served by the simulator and loaded with a repair (below) rather than failing the window.
const REPAIRED_KINDS: readonly CorruptionKind[] = ['duplicate-id', 'nul-characters', 'huge-string'];

describe('bad input from the API (the built CLI)', () => {
  it('covers every corruption kind the simulator can serve', () => {
    expect([...pageCases.map((c) => c.kind), ...REPAIRED_KINDS].sort()).toEqual([...CORRUPTION_KINDS].sort());
  });

  describe.each(pageCases)('a page with $kind', (c) => {
    it(`fails the window with ${c.code} after ${c.attempts} attempt(s), one line naming it, data unchanged`, async () => {
      const served = faultCount(`corrupt:${c.kind}`);
      const { line } = await expectFailedReload(
        { corruptPages: { kind: c.kind, share: 1 } },
        { code: c.code, attempts: c.attempts },
      );
      expect(line).toMatch(c.says);
      // Every attempt read the corrupted page once, and no attempt went further.
      expect(faultCount(`corrupt:${c.kind}`) - served).toBe(c.attempts);
    });
  });

  // The status poll's DONE answer is page 1: a body that is not JSON there is named as page 1 too.
  for (const kind of ['truncated-json', 'html-200'] as const) {
    it(`names page 1 when the first page is ${kind}`, async () => {
      const { line } = await expectFailedReload(
        { corruptPages: { kind, share: 1 } },
        { code: 'PAGE_MALFORMED', attempts: 1, windowAttempts: 1 },
      );
      expect(line).toMatch(new RegExp(`: ${page1(ANY_REPORT)}\\b`));
    });
  }

  // The stage counts pages from 0; messages must count them from 1, as the pager does.
  it('names the page of a type clash as the pager numbers it (page 1)', async () => {
    const { line } = await expectFailedReload(
      { corruptPages: { kind: 'wrong-type', share: 1 } },
      { code: 'FIELD_TYPE_MISMATCH', attempts: 1 },
    );
    expect(line).toMatch(new RegExp(`of window ${W_PATTERN} page 1, but its column is bigint`));
  });
});

/** The reference with the first post changed as `change` says, for the repairs that load a changed window. */
function withFirstPost(change: (post: SimulatorPost) => SimulatorPost): SimulatorPost[] {
  const [first, ...rest] = reference();
  if (first === undefined) throw new Error('the window has no posts');
  return [change(first), ...rest];
}

function withStatus(post: SimulatorPost, status: string): SimulatorPost {
  return { ...post, fields: { ...post.fields, status } };
}

/** A reload under `faults` that must succeed, printing no error line. */
async function expectLoadedReload(faults: Partial<Faults>): Promise<CliResult> {
  sim.setFaults(faults);
  const result = await reload();
  sim.setFaults(CLEAN);
  expect(result.code).toBe(0);
  expect(messageLines(result.stderr)).toEqual([]);
  expect(result.summary).toMatchObject({ status: 'succeeded', windows: { loaded: 1, failed: 0 } });
  expect(await windowRow()).toMatchObject({ status: 'loaded', last_error: null });
  return result;
}

/** Puts the window back to the reference, so that each repair is seen on its own. */
async function restore(): Promise<void> {
  expect((await reload()).code).toBe(0);
  await expectReference();
}

describe('bad records that have a documented repair (the built CLI)', () => {
  it('keeps the last occurrence of a post id repeated within the report', async () => {
    const posts = reference();
    expect(posts.length).toBeGreaterThanOrEqual(2);
    const result = await expectLoadedReload({ corruptPages: { kind: 'duplicate-id', share: 1 } });
    // The page's last post was replaced by a later copy of its first, marked by its status: that copy wins,
    // with its own segments, and the post it replaced was never sent.
    const expected = withFirstPost((post) => withStatus(post, CORRUPT_VALUES.duplicateStatus)).slice(0, -1);
    await expectReference(expected);
    expect(result.summary).toMatchObject({ posts: posts.length - 1 });
    await restore();
  });

  it('replaces NUL characters by U+FFFD and logs how many, naming the window', async () => {
    const result = await expectLoadedReload({ corruptPages: { kind: 'nul-characters', share: 1 } });
    const repaired = CORRUPT_VALUES.nulStatus.replaceAll('\u0000', '\uFFFD');
    expect(repaired).toBe('In\uFFFDFlight\uFFFD');
    await expectReference(withFirstPost((post) => withStatus(post, repaired)));
    const logged = logLines(result.stderr).filter((l) => l.msg === 'NUL characters replaced by U+FFFD');
    expect(logged).toHaveLength(1);
    expect(logged[0]).toMatchObject({ level: 40, window: W, count: 2 });
    expect(logged[0]).toHaveProperty('page');
    await restore();
  });

  it('numbers the page of the NUL log line as the pager does (page 1)', async () => {
    const result = await expectLoadedReload({ corruptPages: { kind: 'nul-characters', share: 1 } });
    const logged = logLines(result.stderr).filter((l) => l.msg === 'NUL characters replaced by U+FFFD');
    await restore();
    expect(logged[0]).toMatchObject({ page: 1 });
  });

  it('loads a 10 MiB string exactly: every character, verified by length and hash in the database', async () => {
    const huge = hugeStringValue();
    expect(huge.length).toBeGreaterThanOrEqual(HUGE_STRING_MIN_LENGTH);
    const first = reference()[0];
    await expectLoadedReload({ corruptPages: { kind: 'huge-string', share: 1 } });
    const { rows } = await db.pool.query<{ chars: number; bytes: number; md5: string; posts: string }>(
      `SELECT char_length(creative_link) AS chars, octet_length(creative_link) AS bytes, md5(creative_link) AS md5,
              (SELECT count(*) FROM ${SCHEMA}.posts)::text AS posts
         FROM ${SCHEMA}.posts WHERE platform_post_id = $1`,
      [first?.id],
    );
    // char_length counts code points; a JavaScript length counts UTF-16 units.
    expect(rows).toEqual([
      {
        chars: [...huge].length,
        bytes: Buffer.byteLength(huge, 'utf8'),
        md5: createHash('md5').update(huge, 'utf8').digest('hex'),
        posts: String(reference().length),
      },
    ]);
    await restore();
  });
});

describe('report statuses the spec does not define (the built CLI)', () => {
  it('polls an unknown status (ARCHIVED) until the deadline, then fails the window with REPORT_DEADLINE', async () => {
    const { line } = await expectFailedReload(
      { reportStatusOverride: 'ARCHIVED' },
      { code: 'REPORT_DEADLINE', attempts: ATTEMPTS, env: { POST_REPORTS_POLL_DEADLINE_MS: '300' } },
    );
    expect(line).toMatch(
      new RegExp(
        `: report ${ANY_REPORT} was not DONE after \\d+ ms \\(\\d+ polls, deadline 300 ms, POST_REPORTS_POLL_DEADLINE_MS\\); last status ARCHIVED$`,
      ),
    );
  });

  it('fails at once on an unknown status that reads as a failure (CANCELLED): REPORT_FAILED', async () => {
    const served = faultCount('report-status-override');
    const { line } = await expectFailedReload(
      { reportStatusOverride: 'CANCELLED' },
      { code: 'REPORT_FAILED', attempts: ATTEMPTS, pastReuseOnRetry: true },
    );
    expect(line).toMatch(new RegExp(`: report ${ANY_REPORT} ended with status CANCELLED$`));
    // One poll per attempt: a failure word is final, never polled again.
    expect(faultCount('report-status-override') - served).toBe(ATTEMPTS);
  });
});

describe('after the sweep', () => {
  it('a clean run loads the window exactly as the reference and leaves no stage behind', async () => {
    // The API hands back the report that failed above until its reuse period ends.
    sim.advanceTime(REUSE_PASSED_MS);
    const result = await reload();
    expect(result.code).toBe(0);
    expect(messageLines(result.stderr)).toEqual([]);
    await expectReference();
    expect(await windowRow()).toMatchObject({
      status: 'loaded',
      row_count: String(reference().length),
      last_error: null,
    });
    const { rows } = await db.pool.query(
      `SELECT tablename FROM pg_tables WHERE schemaname = $1 AND tablename LIKE 'stage\\_2%'`,
      [SCHEMA],
    );
    expect(rows).toEqual([]);
  });
});
