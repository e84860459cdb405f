import { isLosslessNumber, stringify } from 'lossless-json';
import { afterAll, beforeEach, describe, expect, it } from 'vitest';
import { KIND_SHAPES, type ReportParams, startSimulator } from '../../../src/simulator/server.js';
import {
  containsNull,
  createReport,
  getText,
  headers,
  idsOf,
  nextPageOf,
  parseExact,
  readAllPages,
  reportUrl,
} from './sim-client.js';

const simulator = await startSimulator({
  shapes: KIND_SHAPES,
  seed: 7,
  postsPerDay: 100,
  generationDelayMs: 5_000,
});
afterAll(() => simulator.close());

const january: ReportParams = { start_date: '2026-01-01', end_date: '2026-01-31' };

async function waitDone(id: string): Promise<void> {
  simulator.advanceTime(5_000);
  const { text } = await getText(simulator, reportUrl(simulator, id));
  expect(JSON.parse(text)).toMatchObject({ id, status: 'DONE' });
}

async function post(
  body: string,
  contentType = 'application/json',
): Promise<{ status: number; json: unknown }> {
  const response = await fetch(`${simulator.baseUrl}/reports/posts`, {
    method: 'POST',
    headers: { ...headers(simulator), 'content-type': contentType },
    body,
  });
  return { status: response.status, json: await response.json() };
}

function errorMessage(json: unknown): string {
  const error = (json as { error?: { code?: unknown; message?: unknown } }).error;
  expect(typeof error?.code).toBe('string');
  expect(typeof error?.message).toBe('string');
  return error?.message as string;
}

describe('authentication', () => {
  const url = () => `${simulator.baseUrl}/reports/posts/dimensions`;

  it('accepts the bearer header', async () => {
    const response = await fetch(url(), { headers: headers(simulator) });
    expect(response.status).toBe(200);
    const dimensions = (await response.json()) as Record<string, unknown>;
    expect(dimensions.brands).toContain('Café Ñandú');
    expect(dimensions.brands).toContain('東京ストア');
    expect(dimensions.custom_segments).toEqual([
      { name: 'Region', values: ['North', 'South', 'East', 'West', 'Central'] },
      { name: 'Campaign Type', values: ['Always On', 'Seasonal', 'Product Launch', 'Día de Muertos'] },
    ]);
  });

  it('answers 401 without a header, with a wrong token, or with another scheme', async () => {
    for (const authorization of [
      undefined,
      'Bearer wrong-token',
      `Basic ${simulator.token}`,
      'Bearer ',
      simulator.token,
    ]) {
      const response = await fetch(url(), authorization === undefined ? {} : { headers: { authorization } });
      expect(response.status).toBe(401);
      errorMessage(await response.json());
    }
  });

  it('refuses an access_token query parameter, even next to a valid header', async () => {
    for (const init of [{}, { headers: headers(simulator) }]) {
      const response = await fetch(`${url()}?access_token=${simulator.token}`, init);
      expect(response.status).toBe(401);
      expect(errorMessage(await response.json())).toContain('access_token');
    }
  });

  it('requires the header on every route', async () => {
    const create = await fetch(`${simulator.baseUrl}/reports/posts`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(january),
    });
    expect(create.status).toBe(401);
    const report = await createReport(simulator, january);
    expect((await fetch(reportUrl(simulator, report.id))).status).toBe(401);
  });
});

describe('validation', () => {
  const cases: [string, string, string][] = [
    ['malformed JSON', '{"start_date": "2026-01-01",', 'not valid JSON'],
    ['a body that is not an object', '["2026-01-01"]', 'JSON object'],
    ['null body', 'null', 'JSON object'],
    ['a missing start_date', '{"end_date":"2026-01-02"}', 'start_date'],
    ['a missing end_date', '{"start_date":"2026-01-02"}', 'end_date'],
    ['a malformed date', '{"start_date":"2026-1-02","end_date":"2026-01-03"}', '2026-1-02'],
    ['an impossible date', '{"start_date":"2026-02-30","end_date":"2026-03-03"}', '2026-02-30'],
    ['a date that is not a string', '{"start_date":20260101,"end_date":"2026-03-03"}', '20260101'],
    ['end before start', '{"start_date":"2026-03-02","end_date":"2026-03-01"}', 'before'],
    [
      'a filter that is not an array',
      '{"start_date":"2026-03-01","end_date":"2026-03-01","brands":"Café Ñandú"}',
      'brands',
    ],
    [
      'a filter with a non-string',
      '{"start_date":"2026-03-01","end_date":"2026-03-01","markets":["US",1]}',
      'markets',
    ],
    [
      'an unknown custom segment name',
      '{"start_date":"2026-03-01","end_date":"2026-03-01","custom_segments":[{"name":"Planet","values":["Mars"]}]}',
      'Planet',
    ],
    [
      'an unknown custom segment value',
      '{"start_date":"2026-03-01","end_date":"2026-03-01","custom_segments":[{"name":"Region","values":["North","Atlantis"]}]}',
      'Atlantis',
    ],
    [
      'custom segment values that are not an array',
      '{"start_date":"2026-03-01","end_date":"2026-03-01","custom_segments":[{"name":"Region","values":"North"}]}',
      'Region',
    ],
    [
      'custom_segments not an array',
      '{"start_date":"2026-03-01","end_date":"2026-03-01","custom_segments":{}}',
      'custom_segments',
    ],
    ['a range that is too long', '{"start_date":"2000-01-01","end_date":"2026-03-01"}', 'days'],
  ];

  it.each(cases)('answers 400 for %s, naming the problem', async (_name, body, needle) => {
    const { status, json } = await post(body);
    expect(status).toBe(400);
    expect(errorMessage(json)).toContain(needle);
  });

  it('answers 415 when Content-Type is not application/json', async () => {
    expect((await post(JSON.stringify(january), 'text/plain')).status).toBe(415);
    const response = await fetch(`${simulator.baseUrl}/reports/posts`, {
      method: 'POST',
      headers: { authorization: `Bearer ${simulator.token}` },
      body: new Uint8Array(Buffer.from(JSON.stringify(january))),
    });
    expect(response.status).toBe(415);
    expect((await post(JSON.stringify(january), 'Application/JSON; charset=utf-8')).status).toBe(200);
  });

  it('answers 413 for a body over 1 MB', async () => {
    const { status, json } = await post(JSON.stringify({ ...january, brands: ['x'.repeat(1_100_000)] }));
    expect(status).toBe(413);
    errorMessage(json);
  });

  it('treats unknown brand values as matching no post', async () => {
    const report = await createReport(simulator, { ...january, brands: ['No Such Brand'] });
    await waitDone(report.id);
    const pages = await readAllPages(simulator, report.id);
    expect(pages).toHaveLength(1);
    expect((parseExact(pages[0] ?? '') as { data: unknown[] }).data).toEqual([]);
  });
});

describe('routing', () => {
  it('answers 404 for unknown paths and 405 for wrong methods, with JSON bodies', async () => {
    for (const path of ['/reports', '/reports/posts/x/y', '/audits/posts', '']) {
      const response = await fetch(`${simulator.baseUrl}${path}`, { headers: headers(simulator) });
      expect(response.status).toBe(404);
      errorMessage(await response.json());
    }
    const outside = await fetch(simulator.baseUrl.replace('/v4', '/v3/reports'), {
      headers: headers(simulator),
    });
    expect(outside.status).toBe(404);
    for (const [method, path] of [
      ['DELETE', '/reports/posts/dimensions'],
      ['GET', '/reports/posts'],
      ['PUT', '/reports/posts/abc'],
      ['OPTIONS', '/reports/posts'],
    ] as const) {
      const response = await fetch(`${simulator.baseUrl}${path}`, { method, headers: headers(simulator) });
      expect(response.status).toBe(405);
      expect(response.headers.get('allow')).toBeTruthy();
      errorMessage(await response.json());
    }
  });

  it('answers 404 for an unknown report id and an unknown page token', async () => {
    const unknown = await getText(simulator, reportUrl(simulator, '00000000-0000-4000-8000-000000000000'));
    expect(unknown.status).toBe(404);
    errorMessage(JSON.parse(unknown.text));
    const report = await createReport(simulator, { start_date: '2026-02-01', end_date: '2026-02-01' });
    await waitDone(report.id);
    for (const token of ['11111111-1111-4111-8111-111111111111', 'not-a-guid', '']) {
      const page = await getText(simulator, reportUrl(simulator, report.id, token));
      expect(page.status).toBe(404);
      errorMessage(JSON.parse(page.text));
    }
  });
});

describe('reports', () => {
  beforeEach(() => simulator.setFaults({}));

  it('stays IN_PROGRESS until the generation delay has passed, then is DONE', async () => {
    const report = await createReport(simulator, { start_date: '2026-03-01', end_date: '2026-03-02' });
    expect(report.status).toBe('IN_PROGRESS');
    expect(report.id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    const before = await getText(simulator, reportUrl(simulator, report.id));
    expect(JSON.parse(before.text)).toEqual({ id: report.id, status: 'IN_PROGRESS' });
    // The simulator clock also follows real time: leave a margin of one second.
    simulator.advanceTime(4_000);
    expect(JSON.parse((await getText(simulator, reportUrl(simulator, report.id))).text).status).toBe(
      'IN_PROGRESS',
    );
    simulator.advanceTime(1_000);
    const after = parseExact((await getText(simulator, reportUrl(simulator, report.id))).text) as {
      status: string;
      data: unknown[];
    };
    expect(after.status).toBe('DONE');
    expect(after.data).toHaveLength(200);
  });

  it('returns the same id and snapshot for an identical creation call, a new one after the reuse window', async () => {
    const params: ReportParams = { start_date: '2026-04-01', end_date: '2026-04-03', markets: ['US', 'JP'] };
    const first = await createReport(simulator, params);
    const reordered = await createReport(simulator, {
      markets: ['JP', 'US', 'JP'],
      end_date: '2026-04-03',
      start_date: '2026-04-01',
    });
    expect(reordered.id).toBe(first.id);
    const other = await createReport(simulator, { ...params, markets: ['US'] });
    expect(other.id).not.toBe(first.id);
    const created = simulator.stats().reportsCreatedByStartDate['2026-04-01'];
    expect(created).toBe(2);
    simulator.addPosts('2026-04-02', 5);
    simulator.advanceTime(2 * 60 * 60 * 1000);
    const again = await createReport(simulator, params);
    expect(again).toEqual({ id: first.id, status: 'DONE' });
    const snapshot = (await readAllPages(simulator, first.id)).flatMap((text) => idsOf(text));
    const truthBefore = simulator.referencePosts(params);
    expect(snapshot.length).toBeLessThan(truthBefore.length);
    simulator.advanceTime(60 * 60 * 1000);
    const fresh = await createReport(simulator, params);
    expect(fresh.id).not.toBe(first.id);
    await waitDone(fresh.id);
    const freshIds = (await readAllPages(simulator, fresh.id)).flatMap((text) => idsOf(text));
    expect(freshIds).toEqual(truthBefore.map((p) => BigInt(p.id)));
  });

  it('pages through 2,500+ posts returning exactly the reference posts, ids as exact integers', async () => {
    const report = await createReport(simulator, january);
    await waitDone(report.id);
    const truth = simulator.referencePosts(january);
    expect(truth.length).toBe(3100);
    const pages = await readAllPages(simulator, report.id);
    expect(pages).toHaveLength(4);
    const served: unknown[] = [];
    pages.forEach((text, i) => {
      const page = parseExact(text) as { id: string; status: string; data: unknown[] };
      expect(page.id).toBe(report.id);
      expect(page.status).toBe('DONE');
      expect(page.data.length).toBeLessThanOrEqual(1000);
      const next = nextPageOf(page);
      if (i === pages.length - 1) expect(next).toBeNull();
      else expect(String(next)).toMatch(/^[0-9a-f-]{36}$/);
      served.push(...page.data);
    });
    const ids = pages.flatMap((text) => idsOf(text));
    expect(ids).toEqual(truth.map((post) => BigInt(post.id)));
    expect(simulator.referenceIds(january)).toEqual(truth.map((post) => post.id));
    expect(new Set(ids).size).toBe(ids.length);
    for (const id of ids) expect(id > 2n ** 53n).toBe(true);
    // Neighbouring ids collide once rounded to doubles: the test would notice a lossy parse.
    expect(Number(ids[0]) === Number(ids[1])).toBe(true);
    expect(served.map((record) => stringify(record))).toEqual(
      truth.map((post) => stringify(parseExact(post.text))),
    );
  });

  it('serves records whose inapplicable fields are omitted, never null', async () => {
    const truth = simulator.referencePosts(january);
    const report = await createReport(simulator, january);
    const records = (await readAllPages(simulator, report.id)).flatMap(
      (text) => (parseExact(text) as { data: Record<string, unknown>[] }).data,
    );
    expect(records.some(containsNull)).toBe(false);
    const keys = (record: Record<string, unknown>) => new Set(Object.keys(record));
    const preflight = records.filter((r) => r.status === 'Pre-Flight');
    const inflight = records.filter((r) => r.status === 'In-Flight');
    expect(preflight.length).toBeGreaterThan(100);
    expect(inflight.length).toBeGreaterThan(100);
    for (const record of preflight) {
      expect(
        keys(record).has('total_spend') || keys(record).has('engagements') || keys(record).has('video_views'),
      ).toBe(false);
      expect(typeof record.name).toBe('string');
      expect(typeof record.email).toBe('string');
    }
    for (const record of inflight) expect(keys(record).has('name') || keys(record).has('email')).toBe(false);
    for (const record of records.filter((r) => r.asset_type === 'image'))
      expect(keys(record).has('video_views')).toBe(false);
    expect(records.some((r) => r.asset_type === 'video' && 'video_views' in r)).toBe(true);
    for (const record of records.filter((r) => r.channel === 'Pinterest'))
      expect('ad_format' in record).toBe(false);
    expect(records.some((r) => 'ad_format' in r)).toBe(true);
    expect(new Set(records.map((r) => Object.keys(r).length)).size).toBeGreaterThan(5);
    // Some decimals carry more significant digits than a double keeps.
    const decimals = truth.flatMap((p) =>
      Object.values(p.fields).flatMap((v) =>
        typeof v === 'object' && v !== null && 'number' in v ? [v.number] : [],
      ),
    );
    expect(decimals.some((text) => text.replace(/^0\.0*|\./g, '').length > 15)).toBe(true);
    for (const record of records) {
      expect(record.date_captured).toMatch(/^2026-01-\d\d$/);
      expect(isLosslessNumber(record.platform_asset_id)).toBe(true);
      expect(record.custom_segments).toHaveLength(2);
    }
  });

  it('filters by every dimension and custom segments, as the reference says', async () => {
    const params: ReportParams = {
      ...january,
      channels: ['Instagram', 'Pinterest'],
      ad_formats: ['Reels', 'Stories'],
      content_types: ['brand', 'creator'],
      brands: ['Café Ñandú', '東京ストア'],
      custom_segments: [{ name: 'Campaign Type', values: ['Día de Muertos', 'Seasonal'] }],
    };
    const truth = simulator.referencePosts(params);
    expect(truth.length).toBeGreaterThan(5);
    for (const post of truth) {
      expect(post.fields.channel).toBe('Instagram');
      expect(['Reels', 'Stories']).toContain(post.fields.ad_format);
      expect(['brand', 'creator']).toContain(post.fields.content_type);
      expect(['Café Ñandú', '東京ストア']).toContain(post.fields.brand);
      expect(['Día de Muertos', 'Seasonal']).toContain(
        post.segments.find((s) => s.name === 'Campaign Type')?.value,
      );
    }
    const report = await createReport(simulator, params);
    await waitDone(report.id);
    const ids = (await readAllPages(simulator, report.id)).flatMap((text) => idsOf(text));
    expect(ids).toEqual(truth.map((post) => BigInt(post.id)));
  });

  it('keeps the snapshot of a report when posts are added or removed later', async () => {
    const params: ReportParams = { start_date: '2026-05-01', end_date: '2026-05-02' };
    const before = simulator.referencePosts(params);
    const report = await createReport(simulator, params);
    simulator.removePosts('2026-05-01', 10);
    simulator.addPosts('2026-05-02', 3);
    await waitDone(report.id);
    const served = (await readAllPages(simulator, report.id)).flatMap((text) => idsOf(text));
    expect(served).toEqual(before.map((post) => BigInt(post.id)));
    const after = simulator.referencePosts(params);
    expect(after).toHaveLength(before.length - 7);
    const removed = new Set(before.slice(90, 100).map((post) => post.id));
    expect(after.some((post) => removed.has(post.id))).toBe(false);
    simulator.addPosts('2026-05-01', 1);
    const readded = simulator.referencePosts(params);
    expect(readded.some((post) => removed.has(post.id))).toBe(false);
    expect(readded).toHaveLength(before.length - 6);
  });
});
