import { afterAll, beforeEach, describe, expect, it } from 'vitest';
import { type ApiError, ConfigError, DataError } from '../../../src/errors.js';
import { fetchDimensions, validateFilters } from '../../../src/extract/dimensions.js';
import { readPages, reportPath, toReportPage } from '../../../src/extract/pager.js';
import { createReport, waitForReport } from '../../../src/extract/report.js';
import { ReportReadiness } from '../../../src/extract/report-readiness.js';
import { PageTape, postIds } from '../../../src/model/page-tape.js';
import { type CorruptionKind, type RunningSimulator, startSimulator } from '../../../src/simulator/server.js';
import { largeArrayBuffers, slicedParents } from '../../helpers/heap-snapshot.js';
import { clientFor, failure } from './harness.js';

// 500 posts a day: a 20-day window holds 10,000 posts, 10 pages.
// Full pages, one order: these tests count pages and compare the order; ragged pages and another order on a
// second reading have a test of their own below.
const sim: RunningSimulator = await startSimulator({
  seed: 11,
  postsPerDay: 500,
  shapes: { pageFill: 'full', rereadOrder: 'same' },
});
afterAll(() => sim.close());

const BIG = { start: '2026-02-01', end: '2026-02-20' };
const mapping = (window: { start: string; end: string }) => ({ postIdField: 'platform_post_id', window });

describe('reports and pages against the simulator', () => {
  beforeEach(() =>
    sim.setFaults({ corruptPages: null, pageTokenTtlMs: null, reportTtlMs: null, failReportStartDates: [] }),
  );

  it('streams a report of 10,000 posts page by page, ids exact', async () => {
    const { client, config } = clientFor(sim);
    const { id } = await createReport(client, BIG, {});
    const first = await waitForReport(client, id, config.poll, mapping(BIG));
    const ids: string[] = [];
    const sizes: number[] = [];
    for await (const page of readPages(client, id, { mapping: mapping(BIG), first })) {
      sizes.push(page.posts.length);
      expect(page.index).toBe(sizes.length);
      // The simulator's pages are read in one pass, none of their values the full way: the run's count says so.
      expect(page.reading).toMatchObject({ onePass: true, valuesTheFullWay: 0 });
      expect(page.reading.values).toBeGreaterThan(page.posts.length);
      ids.push(...postIds(page.posts));
    }
    expect(sizes).toEqual(Array.from({ length: 10 }, () => 1000));
    const reference = sim.referencePosts({ start_date: BIG.start, end_date: BIG.end }).map((p) => p.id);
    expect(reference).toHaveLength(10_000);
    expect(reference.some((r) => BigInt(r) > 2n ** 53n)).toBe(true);
    expect(ids).toEqual(reference);
  });

  it('reads each page into memory a page before it was read from: at most two bodies and one tape in all', async () => {
    const { client, config } = clientFor(sim);
    const { id } = await createReport(client, BIG, {});
    const first = await waitForReport(client, id, config.poll, mapping(BIG));
    const bodies = new Set<ArrayBufferLike>();
    const tapes = new Set<ArrayBufferLike>();
    const ids: string[] = [];
    let before: PageTape | undefined;
    for await (const page of readPages(client, id, { mapping: mapping(BIG), first })) {
      // The page before is done with once this one is asked for.
      expect(before?.retired ?? true).toBe(true);
      expect(page.posts).toBeInstanceOf(PageTape);
      const tape = page.posts as PageTape;
      expect(tape.retired).toBe(false);
      if (page.index > 1) {
        bodies.add(tape.bytes.buffer);
        tapes.add(tape.values.buffer);
      }
      ids.push(...postIds(tape));
      before = tape;
    }
    // The last page too, once the pages end.
    expect(before?.retired).toBe(true);
    // Pages 2 to 10, each read while the next one downloads: two bodies (one, where a page was read before the
    // next one's answer came) instead of nine.
    expect(bodies.size).toBeGreaterThanOrEqual(1);
    expect(bodies.size).toBeLessThanOrEqual(2);
    expect(tapes.size).toBe(1);
    const reference = sim.referencePosts({ start_date: BIG.start, end_date: BIG.end }).map((p) => p.id);
    expect(ids).toEqual(reference);
  });

  it('lets a page go once read: the next page token kept of it is not a view into its text or bytes', async () => {
    const { client, config } = clientFor(sim);
    // The pager keeps every token of a report (to find a cycle) until the report is read: this keeps them too.
    const tokens = await (async () => {
      const { id } = await createReport(client, BIG, {});
      const first = await waitForReport(client, id, config.poll, mapping(BIG));
      const kept: (string | null)[] = [];
      for await (const page of readPages(client, id, { mapping: mapping(BIG), first }))
        kept.push(page.nextPage);
      return kept;
    })();
    expect(tokens.filter((token) => token !== null)).toHaveLength(9);
    // Each page (about 600 kB here) is garbage once its posts are: no slice of its text (read the full way) and no
    // view of its bytes (read in one pass) may outlive them.
    expect(await slicedParents((text) => text.startsWith('{"id":') && text.includes('"data":['))).toEqual([]);
    expect(await largeArrayBuffers(256 * 1024)).toEqual([]);
    expect(tokens).toHaveLength(10);
  });

  it('stops early, aborts the prefetch, and leaves the client usable', async () => {
    const { client, config } = clientFor(sim);
    const { id } = await createReport(client, BIG, {});
    const first = await waitForReport(client, id, config.poll, mapping(BIG));
    const before = sim.stats().byRoute['GET /reports/posts/{id}'] ?? 0;
    for await (const page of readPages(client, id, { mapping: mapping(BIG), first })) {
      expect(page.index).toBe(1);
      break;
    }
    // At most the one page fetched ahead was requested.
    expect((sim.stats().byRoute['GET /reports/posts/{id}'] ?? 0) - before).toBeLessThanOrEqual(1);
    expect((await fetchDimensions(client)).brands?.length).toBeGreaterThan(0);
  });

  it('reads ragged pages (short, and empty before the end), and a second reading in another order: the same posts', async () => {
    const unkind = await startSimulator({ seed: 23, postsPerDay: 200, pageSize: 150 });
    try {
      const { client, config } = clientFor(unkind);
      const window = { start: '2026-02-01', end: '2026-02-10' };
      const reference = unkind.referenceIds({ start_date: window.start, end_date: window.end });
      const readings: { sizes: number[]; ids: string[] }[] = [];
      for (let i = 0; i < 2; i += 1) {
        // The same report both times (within the reuse period), read from its first page.
        const { id } = await createReport(client, window, {});
        const first = await waitForReport(client, id, config.poll, mapping(window));
        const reading = { sizes: [] as number[], ids: [] as string[] };
        for await (const page of readPages(client, id, { mapping: mapping(window), first })) {
          const ids = postIds(page.posts);
          reading.sizes.push(ids.length);
          reading.ids.push(...ids);
        }
        readings.push(reading);
      }
      const [once, again] = readings as [(typeof readings)[0], (typeof readings)[0]];
      const beforeLast = [...once.sizes.slice(0, -1), ...again.sizes.slice(0, -1)];
      expect(
        beforeLast.some((n) => n > 0 && n < 150),
        JSON.stringify(readings.map((r) => r.sizes)),
      ).toBe(true);
      expect(beforeLast, JSON.stringify(readings.map((r) => r.sizes))).toContain(0);
      expect(again.ids).not.toEqual(once.ids);
      const sorted = [...reference].sort();
      expect([...once.ids].sort()).toEqual(sorted);
      expect([...again.ids].sort()).toEqual(sorted);
    } finally {
      await unkind.close();
    }
  });

  it('resumes from a stored next_page token', async () => {
    const { client, config } = clientFor(sim);
    const { id } = await createReport(client, BIG, {});
    const first = await waitForReport(client, id, config.poll, mapping(BIG));
    const token = first.nextPage ?? '';
    const indexes: number[] = [];
    const ids: string[] = [];
    for await (const page of readPages(client, id, {
      mapping: mapping(BIG),
      startToken: token,
      startIndex: 1,
    })) {
      indexes.push(page.index);
      ids.push(...postIds(page.posts));
    }
    expect(indexes).toEqual([2, 3, 4, 5, 6, 7, 8, 9, 10]);
    // Exactly the records after the first page, in the reference's order.
    const reference = sim.referencePosts({ start_date: BIG.start, end_date: BIG.end }).map((p) => p.id);
    expect(ids).toEqual(reference.slice(1000));
  });

  it('reports a failure status', async () => {
    const { client, config } = clientFor(sim);
    sim.setFaults({ failReportStartDates: ['2025-05-05'] });
    const { id } = await createReport(client, { start: '2025-05-05', end: '2025-05-06' }, {});
    const error = (await failure(() => waitForReport(client, id, config.poll, mapping(BIG)))) as ApiError;
    expect(error.code).toBe('REPORT_FAILED');
    expect(error.message).toBe(`report ${id} ended with status FAILED`);
  });

  it('gives up at the polling deadline, saying how long and the last status', async () => {
    const slow = await startSimulator({ seed: 3, generationDelayMs: 3_600_000 });
    try {
      // Polls come every 5-20 ms: a deadline of many polls, so that the count does not hang on how long one
      // request takes (with 60 ms, a first request slower than that left a single poll).
      const { client, config } = clientFor(slow, { POST_REPORTS_POLL_DEADLINE_MS: '1000' });
      const { id } = await createReport(client, { start: '2026-01-01', end: '2026-01-01' }, {});
      const polls: string[] = [];
      const error = (await failure(() =>
        waitForReport(client, id, config.poll, mapping(BIG), { onPoll: (status) => void polls.push(status) }),
      )) as ApiError;
      expect(error.code).toBe('REPORT_DEADLINE');
      expect(error.message).toMatch(
        new RegExp(
          `^report ${id} was not DONE after \\d+ ms \\(${polls.length} polls, deadline 1000 ms, POST_REPORTS_POLL_DEADLINE_MS\\); last status IN_PROGRESS$`,
        ),
      );
      expect(polls.length).toBeGreaterThan(1);
    } finally {
      await slow.close();
    }
  });

  it("records how long the run's new reports took, and aims the next one's polls there", async () => {
    const slow = await startSimulator({ seed: 4, generationDelayMs: 300 });
    try {
      const day = (date: string) => ({ start: date, end: date });
      // Polls 5-20 ms apart find the report DONE after a few: how long it took is recorded.
      const quick = clientFor(slow);
      const readiness = new ReportReadiness();
      const learnt = await createReport(quick.client, day('2026-03-01'), {});
      await waitForReport(quick.client, learnt.id, quick.config.poll, mapping(day('2026-03-01')), {
        readiness: { record: readiness, createdAt: performance.now() },
      });
      const aim = readiness.nextAimMs(0);
      expect(aim).toBeGreaterThan(0);
      // The API hands the same report back, DONE at the first poll: that says nothing, and nothing is recorded.
      const again = await createReport(quick.client, day('2026-03-01'), {});
      await waitForReport(quick.client, again.id, quick.config.poll, mapping(day('2026-03-01')), {
        readiness: { record: readiness, createdAt: performance.now() },
      });
      expect(readiness.nextAimMs(0)).toBe(aim);
      // Polls ten minutes apart: the report, generated in 300 ms, is read by the poll aimed a second after its
      // creation (the test's own timeout would end it long before the second poll of the usual schedule).
      const patient = clientFor(slow, {
        POST_REPORTS_POLL_INITIAL_MS: '600000',
        POST_REPORTS_POLL_MAX_MS: '600000',
      });
      const aimed = new ReportReadiness();
      aimed.observe(1000);
      const { id } = await createReport(patient.client, day('2026-03-02'), {});
      const polls: string[] = [];
      const first = await waitForReport(patient.client, id, patient.config.poll, mapping(day('2026-03-02')), {
        readiness: { record: aimed, createdAt: performance.now() },
        onPoll: (status) => void polls.push(status),
      });
      expect(polls).toEqual(['IN_PROGRESS']);
      expect(first.posts.length).toBeGreaterThan(0);
    } finally {
      await slow.close();
    }
  });

  it('refuses invalid filters before any report is created, naming the value', async () => {
    const fresh = await startSimulator({ seed: 5 });
    try {
      const freshClient = clientFor(fresh).client;
      const dimensions = await fetchDimensions(freshClient);
      const error = await failure(async () =>
        validateFilters({ customSegments: [{ name: 'Region', values: ['Nowhere'] }] }, dimensions),
      );
      expect(error).toBeInstanceOf(ConfigError);
      expect(error.message).toBe(
        'unknown custom segment value "Nowhere" for "Region" (valid: Central, East, North, South, West)',
      );
      expect(fresh.stats().creationCalls).toBe(0);
    } finally {
      await fresh.close();
    }
  });

  it('reports a vanished report as REPORT_GONE', async () => {
    const { client, config } = clientFor(sim);
    const { id } = await createReport(client, { start: '2026-03-01', end: '2026-03-03' }, {});
    sim.setFaults({ reportTtlMs: 60_000 });
    sim.advanceTime(120_000);
    const error = (await failure(() => waitForReport(client, id, config.poll, mapping(BIG)))) as ApiError;
    expect(error.code).toBe('REPORT_GONE');
    expect(error.status).toBe(404);
    expect(error.message).toContain(`report ${id} is gone (404`);
  });

  it('reports an expired page token as REPORT_GONE', async () => {
    const { client, config } = clientFor(sim);
    const { id } = await createReport(client, BIG, {});
    const first = await waitForReport(client, id, config.poll, mapping(BIG));
    sim.setFaults({ pageTokenTtlMs: 1000 });
    sim.advanceTime(5000);
    const error = (await failure(async () => {
      for await (const _ of readPages(client, id, { mapping: mapping(BIG), first })) {
        // consume
      }
    })) as ApiError;
    expect(error.code).toBe('REPORT_GONE');
    expect(error.status).toBe(410);
    expect(error.message).toContain('page 2');
  });

  it.each<[CorruptionKind, string]>([
    ['data-not-array', 'data is an object, not an array'],
    ['too-many-records', 'more than the 1000 a page may hold'],
    ['missing-response-metadata', 'response_metadata is missing'],
    ['next-page-not-string', 'next_page is a number'],
    ['truncated-json', 'invalid JSON'],
    ['html-200', 'invalid JSON'],
  ])('refuses a malformed page (%s) naming the report and page', async (kind, why) => {
    const { client, config } = clientFor(sim);
    const window = { start: '2026-04-01', end: '2026-04-04' };
    const { id } = await createReport(client, window, {});
    const first = await waitForReport(client, id, config.poll, mapping(BIG));
    sim.setFaults({ corruptPages: { kind, share: 1 } });
    const error = (await failure(async () => {
      for await (const _ of readPages(client, id, { mapping: mapping(BIG), first })) {
        // consume
      }
    })) as DataError;
    expect(error).toBeInstanceOf(DataError);
    expect(error.code).toBe('PAGE_MALFORMED');
    expect(error.message).toContain(`report ${id}`);
    expect(error.message).toContain('page 2');
    expect(error.message).toContain(why);
  });

  it('downloads a page without parsing it: the body is parsed, exactly, only when asked', async () => {
    const { client, config } = clientFor(sim);
    const { id } = await createReport(client, BIG, {});
    const first = await waitForReport(client, id, config.poll, mapping(BIG));
    const query = { page: first.nextPage! };
    const good = await client.getDeferredJson(reportPath(id), { query });
    const page = toReportPage(good.parse(), id, 2, query.page, good.bytes, mapping(BIG));
    const reference = sim.referencePosts({ start_date: BIG.start, end_date: BIG.end }).map((p) => p.id);
    expect(postIds(page.posts)).toEqual(reference.slice(1000, 2000));
    sim.setFaults({ corruptPages: { kind: 'truncated-json', share: 1 } });
    const bad = await client.getDeferredJson(reportPath(id), { query });
    expect(bad.bytes).toBeGreaterThan(0);
    const error = (await failure(async () => bad.parse())) as DataError;
    expect(error).toBeInstanceOf(DataError);
    expect(error.code).toBe('PAGE_MALFORMED');
    expect(error.message).toContain('invalid JSON');
  });

  it.each<[CorruptionKind, string]>([
    ['record-without-id', 'post id is missing'],
    ['non-integer-id', 'post id 12345.5 is not an integer'],
  ])('rejects a bad record (%s) naming window and page', async (kind, why) => {
    const { client, config } = clientFor(sim);
    const window = { start: '2026-04-01', end: '2026-04-04' };
    sim.setFaults({ corruptPages: { kind, share: 1 } });
    const { id } = await createReport(client, window, {});
    const error = await failure(async () => waitForReport(client, id, config.poll, mapping(window)));
    expect((error as DataError).code).toBe('RECORD_INVALID');
    expect(error.message).toBe(`record 1 of page 1 of window 2026-04-01..2026-04-04: ${why}`);
  });
});
