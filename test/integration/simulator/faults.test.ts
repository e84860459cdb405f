import { afterAll, beforeEach, describe, expect, it } from 'vitest';
import { CORRUPTION_KINDS, DEFAULT_FAULTS, mergeFaults } from '../../../src/simulator/faults.js';
import { CORRUPT_VALUES, HUGE_STRING_MIN_LENGTH, hugeStringValue } from '../../../src/simulator/page-body.js';
import type { CorruptionKind } from '../../../src/simulator/server.js';
import { KIND_SHAPES, type ReportParams, startSimulator } from '../../../src/simulator/server.js';
import {
  createReport,
  getText,
  headers,
  idsOf,
  nextPageOf,
  parseExact,
  readAllPages,
  reportUrl,
} from './sim-client.js';

const simulator = await startSimulator({ shapes: KIND_SHAPES, seed: 3, postsPerDay: 600 });
afterAll(() => simulator.close());

const OFF = DEFAULT_FAULTS;

beforeEach(() => simulator.setFaults(OFF));

const dimensionsUrl = () => `${simulator.baseUrl}/reports/posts/dimensions`;
const twoDays: ReportParams = { start_date: '2026-06-01', end_date: '2026-06-02' };

async function dimensionsStatus(): Promise<number> {
  const response = await fetch(dimensionsUrl(), { headers: headers(simulator) });
  await response.arrayBuffer();
  return response.status;
}

describe('request faults', () => {
  it('adds latency without changing the response', async () => {
    simulator.setFaults({ latencyMs: 40 });
    const response = await fetch(dimensionsUrl(), { headers: headers(simulator) });
    expect(response.status).toBe(200);
    expect(((await response.json()) as { brands: string[] }).brands).toContain('Café Ñandú');
  });

  it('answers 429 with Retry-After and a JSON body', async () => {
    simulator.setFaults({ rateLimitShare: 1, retryAfterSeconds: 7 });
    const response = await fetch(dimensionsUrl(), { headers: headers(simulator) });
    expect(response.status).toBe(429);
    expect(response.headers.get('retry-after')).toBe('7');
    expect(await response.json()).toMatchObject({ error: { code: 'rate_limited' } });
    simulator.setFaults({ retryAfterSeconds: 0 });
    const zero = await fetch(dimensionsUrl(), { headers: headers(simulator) });
    expect(zero.headers.get('retry-after')).toBe('0');
    await zero.arrayBuffer();
    simulator.setFaults({ rateLimitShare: 0 });
    expect(await dimensionsStatus()).toBe(200);
  });

  it('answers 500, 502 and 503 with JSON bodies', async () => {
    simulator.setFaults({ serverErrorShare: 1 });
    const statuses = new Set<number>();
    for (let i = 0; i < 30; i++) {
      const response = await fetch(dimensionsUrl(), { headers: headers(simulator) });
      statuses.add(response.status);
      expect(await response.json()).toHaveProperty('error.message');
    }
    expect([...statuses].sort()).toEqual([500, 502, 503]);
  });

  it('drops connections without a response, and serves the next request', async () => {
    const before = simulator.stats().faults.drop ?? 0;
    simulator.setFaults({ dropShare: 1 });
    await expect(fetch(dimensionsUrl(), { headers: headers(simulator) })).rejects.toThrow();
    expect(simulator.stats().faults.drop).toBe(before + 1);
    simulator.setFaults({ dropShare: 0 });
    expect(await dimensionsStatus()).toBe(200);
  });

  it('injects partial shares, counted in stats', async () => {
    const before = simulator.stats().faults;
    simulator.setFaults({ rateLimitShare: 0.2, serverErrorShare: 0.2 });
    const statuses: number[] = [];
    for (let i = 0; i < 200; i++) statuses.push(await dimensionsStatus());
    const limited = statuses.filter((s) => s === 429).length;
    const failed = statuses.filter((s) => s >= 500).length;
    expect(limited).toBeGreaterThan(15);
    expect(limited).toBeLessThan(70);
    expect(failed).toBeGreaterThan(15);
    expect(failed).toBeLessThan(70);
    const after = simulator.stats().faults;
    expect((after['rate-limit'] ?? 0) - (before['rate-limit'] ?? 0)).toBe(limited);
    expect((after['server-error'] ?? 0) - (before['server-error'] ?? 0)).toBe(failed);
  });

  it('does not fault requests refused for authentication', async () => {
    simulator.setFaults({ serverErrorShare: 1 });
    const response = await fetch(dimensionsUrl());
    expect(response.status).toBe(401);
    await response.arrayBuffer();
  });
});

describe('report faults', () => {
  it('ends reports FAILED by share; an identical call after the reuse period makes a new report', async () => {
    simulator.setFaults({ failReportShare: 1 });
    const params: ReportParams = { start_date: '2026-07-01', end_date: '2026-07-01' };
    const report = await createReport(simulator, params);
    expect(report.status).toBe('IN_PROGRESS');
    const polled = await getText(simulator, reportUrl(simulator, report.id));
    expect(JSON.parse(polled.text)).toEqual({ id: report.id, status: 'FAILED' });
    simulator.setFaults({ failReportShare: 0 });
    // Within the reuse period an identical call hands back the same report, failed as it is.
    expect((await createReport(simulator, params)).id).toBe(report.id);
    simulator.advanceTime(4 * 3_600_000);
    const retry = await createReport(simulator, params);
    expect(retry.id).not.toBe(report.id);
    expect(JSON.parse((await getText(simulator, reportUrl(simulator, retry.id))).text).status).toBe('DONE');
    expect(simulator.stats().faults['fail-report']).toBeGreaterThanOrEqual(1);
  });

  it('ends reports FAILED for listed start dates only', async () => {
    simulator.setFaults({ failReportStartDates: ['2026-07-10'] });
    const failing = await createReport(simulator, { start_date: '2026-07-10', end_date: '2026-07-11' });
    const fine = await createReport(simulator, { start_date: '2026-07-11', end_date: '2026-07-11' });
    expect(JSON.parse((await getText(simulator, reportUrl(simulator, failing.id))).text).status).toBe(
      'FAILED',
    );
    expect(JSON.parse((await getText(simulator, reportUrl(simulator, fine.id))).text).status).toBe('DONE');
    const again = await createReport(simulator, { start_date: '2026-07-10', end_date: '2026-07-11' });
    expect(JSON.parse((await getText(simulator, reportUrl(simulator, again.id))).text).status).toBe('FAILED');
  });

  it('answers 410 for an expired page token; a fresh read gets fresh tokens', async () => {
    simulator.setFaults({ pageTokenTtlMs: 60_000 });
    const report = await createReport(simulator, twoDays);
    const first = await getText(simulator, reportUrl(simulator, report.id));
    const token = nextPageOf(parseExact(first.text));
    expect(typeof token).toBe('string');
    expect((await getText(simulator, reportUrl(simulator, report.id, String(token)))).status).toBe(200);
    simulator.advanceTime(61_000);
    const expired = await getText(simulator, reportUrl(simulator, report.id, String(token)));
    expect(expired.status).toBe(410);
    expect(JSON.parse(expired.text)).toMatchObject({ error: { code: 'page_expired' } });
    const ids = (await readAllPages(simulator, report.id)).flatMap((text) => idsOf(text));
    expect(ids).toHaveLength(1200);
    expect(simulator.stats().faults['page-token-expired']).toBe(1);
  });

  it('answers an unknown status word for every report while overridden, then the real status', async () => {
    const before = simulator.stats().faults['report-status-override'] ?? 0;
    const report = await createReport(simulator, twoDays);
    const token = String(
      nextPageOf(parseExact((await getText(simulator, reportUrl(simulator, report.id))).text)),
    );
    simulator.setFaults({ reportStatusOverride: 'ARCHIVED' });
    for (const url of [reportUrl(simulator, report.id), reportUrl(simulator, report.id, token)]) {
      const answer = await getText(simulator, url);
      expect(answer.status).toBe(200);
      expect(JSON.parse(answer.text)).toEqual({ id: report.id, status: 'ARCHIVED' });
    }
    // A report that does not exist is still a 404: the override changes statuses, not existence.
    expect((await getText(simulator, reportUrl(simulator, 'no-such-report'))).status).toBe(404);
    expect(simulator.stats().faults['report-status-override']).toBe(before + 2);
    simulator.setFaults({ reportStatusOverride: null });
    const done = parseExact((await getText(simulator, reportUrl(simulator, report.id))).text);
    expect(done).toMatchObject({ status: 'DONE' });
  });

  it('refuses a status override that is not a word', () => {
    for (const bad of ['', 'NOT DONE', 'DONE\n']) {
      expect(() => mergeFaults(DEFAULT_FAULTS, { reportStatusOverride: bad })).toThrow(RangeError);
    }
    expect(mergeFaults(DEFAULT_FAULTS, { reportStatusOverride: 'ARCHIVED' }).reportStatusOverride).toBe(
      'ARCHIVED',
    );
  });

  it('answers 404 for an expired report, and creates a new one for the same call', async () => {
    simulator.setFaults({ reportTtlMs: 30 * 60_000 });
    const params: ReportParams = { start_date: '2026-08-01', end_date: '2026-08-01' };
    const report = await createReport(simulator, params);
    expect((await getText(simulator, reportUrl(simulator, report.id))).status).toBe(200);
    simulator.advanceTime(30 * 60_000);
    const gone = await getText(simulator, reportUrl(simulator, report.id));
    expect(gone.status).toBe(404);
    expect(JSON.parse(gone.text)).toMatchObject({ error: { code: 'report_not_found' } });
    const again = await createReport(simulator, params);
    expect(again.id).not.toBe(report.id);
    expect((await getText(simulator, reportUrl(simulator, again.id))).status).toBe(200);
  });
});

describe('corrupt pages', () => {
  type Check = (text: string, contentType: string | null) => void;
  const data = (text: string) => (parseExact(text) as { data: unknown }).data;
  const checks: Record<CorruptionKind, Check> = {
    'data-not-array': (text) => expect(Array.isArray(data(text))).toBe(false),
    'too-many-records': (text) => expect((data(text) as unknown[]).length).toBeGreaterThan(1000),
    'missing-response-metadata': (text) => expect(parseExact(text)).not.toHaveProperty('response_metadata'),
    'next-page-not-string': (text) => {
      const next = nextPageOf(parseExact(text));
      expect(next === null || typeof next === 'string').toBe(false);
    },
    'truncated-json': (text) => expect(() => parseExact(text)).toThrow(),
    'html-200': (text, contentType) => {
      expect(contentType).toMatch(/^text\/html/);
      expect(text).toMatch(/^<!DOCTYPE html>/);
    },
    'record-without-id': (text) =>
      expect(
        (data(text) as Record<string, unknown>[]).some((record) => !('platform_post_id' in record)),
      ).toBe(true),
    'non-integer-id': (text) => expect(text).toMatch(/"platform_post_id":-?\d+\.\d+/),
    'duplicate-id': (text) => {
      const ids = idsOf(text);
      expect(ids.at(-1)).toBe(ids[0]);
      expect(new Set(ids).size).toBe(ids.length - 1);
      const records = data(text) as Record<string, unknown>[];
      expect(records.at(-1)?.status).toBe(CORRUPT_VALUES.duplicateStatus);
      expect(records[0]?.status).not.toBe(CORRUPT_VALUES.duplicateStatus);
    },
    'wrong-type': (text) => {
      const records = data(text) as Record<string, unknown>[];
      expect(records[0]?.platform_asset_id).toBe(CORRUPT_VALUES.wrongTypeAssetId);
      expect(records.slice(1).every((r) => typeof r.platform_asset_id !== 'string')).toBe(true);
    },
    'nul-characters': (text) => {
      const records = data(text) as Record<string, unknown>[];
      expect(records[0]?.status).toBe(CORRUPT_VALUES.nulStatus);
      expect(String(records[0]?.status)).toContain('\u0000');
    },
    'huge-string': (text) => {
      // JSON.parse (ids rounded, not looked at): the lossless parser takes seconds over 10 MiB.
      const link = (JSON.parse(text) as { data: Record<string, unknown>[] }).data[0]?.creative_link;
      expect(typeof link).toBe('string');
      expect((link as string).length).toBeGreaterThanOrEqual(HUGE_STRING_MIN_LENGTH);
      expect(link === hugeStringValue()).toBe(true);
    },
    'not-a-date': (text) => {
      const records = data(text) as Record<string, unknown>[];
      expect(records[0]?.date_captured).toBe(CORRUPT_VALUES.notADate);
      expect(records.slice(1).every((r) => /^\d{4}-\d{2}-\d{2}$/.test(String(r.date_captured)))).toBe(true);
    },
  };
  // Record-level corruptions change one record and leave the page well-formed, every post still on it.
  const recordLevel = new Set<CorruptionKind>(['wrong-type', 'nul-characters', 'huge-string', 'not-a-date']);

  it('has a check for every corruption kind', () => {
    expect(Object.keys(checks).sort()).toEqual([...CORRUPTION_KINDS].sort());
  });

  it.each(Object.keys(checks) as CorruptionKind[])(
    'serves %s pages with status 200, then recovers',
    async (kind) => {
      const report = await createReport(simulator, twoDays);
      const good = await getText(simulator, reportUrl(simulator, report.id));
      const token = String(nextPageOf(parseExact(good.text)));
      simulator.setFaults({ corruptPages: { kind, share: 1 } });
      const sizes = [1000, 200];
      for (const [i, url] of [
        reportUrl(simulator, report.id),
        reportUrl(simulator, report.id, token),
      ].entries()) {
        const response = await fetch(url, { headers: headers(simulator) });
        expect(response.status).toBe(200);
        const text = await response.text();
        checks[kind](text, response.headers.get('content-type'));
        if (recordLevel.has(kind)) {
          expect(idsOf(text)).toHaveLength(sizes[i] ?? 0);
          expect(typeof nextPageOf(JSON.parse(text))).toBe(i === 0 ? 'string' : 'object');
        }
      }
      simulator.setFaults({ corruptPages: null });
      const last = await getText(simulator, reportUrl(simulator, report.id, token));
      expect(last.status).toBe(200);
      expect(nextPageOf(parseExact(last.text))).toBeNull();
      expect(idsOf(last.text)).toHaveLength(200);
      expect(simulator.stats().faults[`corrupt:${kind}`]).toBe(2);
    },
  );
});
