import { afterAll, describe, expect, it } from 'vitest';
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

const simulator = await startSimulator({
  shapes: KIND_SHAPES,
  seed: 31,
  postsPerDay: 25,
  pageSize: 10,
  fieldSchedule: {
    appearing: [{ field: 'saves_per_view', from: '2026-03-03' }],
    decimalFrom: [{ field: 'watch_units', from: '2026-03-04' }],
  },
});
afterAll(() => simulator.close());
const week: ReportParams = { start_date: '2026-03-02', end_date: '2026-03-05' };

async function page(id: string, token?: string): Promise<{ status: number; text: string; next: unknown }> {
  const { status, text } = await getText(simulator, reportUrl(simulator, id, token));
  const done = status === 200 && text.includes('"status":"DONE"');
  return { status, text, next: done ? nextPageOf(parseExact(text)) : undefined };
}

describe('page size', () => {
  it('serves every post of a report in pages of the configured size', async () => {
    const { id } = await createReport(simulator, week);
    const pages = await readAllPages(simulator, id);
    expect(pages).toHaveLength(10);
    expect(pages.map((text) => idsOf(text).length)).toEqual(Array(10).fill(10));
    expect(pages.flatMap((text) => idsOf(text).map(String))).toEqual(simulator.referenceIds(week));
  });

  it('refuses a page size the API cannot have', async () => {
    await expect(startSimulator({ pageSize: 1001 })).rejects.toThrow(/pageSize/);
    await expect(startSimulator({ pageSize: 0 })).rejects.toThrow(/pageSize/);
  });
});

describe('page faults strike once, where they are placed', () => {
  it('a report vanishes after serving two pages: 404 from then on, and a new report is made for the same call after the reuse period', async () => {
    simulator.advanceTime(4 * 3_600_000);
    simulator.setFaults({ reportGoneAfterPage: 2 });
    const before = simulator.stats().faults['report-gone'] ?? 0;
    const { id } = await createReport(simulator, week);
    const first = await page(id);
    const second = await page(id, String(first.next));
    expect(second.status).toBe(200);
    const third = await page(id, String(second.next));
    expect(third.status).toBe(404);
    expect(JSON.parse(third.text)).toMatchObject({ error: { code: 'report_not_found' } });
    expect((await page(id)).status).toBe(404);
    expect(simulator.stats().faults['report-gone']).toBe(before + 2);
    // Within the reuse period an identical call hands back the vanished report.
    expect((await createReport(simulator, week)).id).toBe(id);
    simulator.advanceTime(4 * 3_600_000);
    const again = await createReport(simulator, week);
    expect(again.id).not.toBe(id);
    expect((await readAllPages(simulator, again.id)).length).toBe(10);
  });

  it('a report gone after no page: its first request after creation answers 404, once the fault is armed', async () => {
    simulator.advanceTime(4 * 3_600_000);
    simulator.setFaults({ reportGoneAfterPage: 0 });
    const before = simulator.stats().faults['report-gone'] ?? 0;
    const { id } = await createReport(simulator, week);
    const first = await page(id);
    expect(first.status).toBe(404);
    expect(JSON.parse(first.text)).toMatchObject({ error: { code: 'report_not_found' } });
    expect(simulator.stats().faults['report-gone']).toBe(before + 1);
    // Struck once: the report made for the same call after the reuse period serves whole.
    simulator.advanceTime(4 * 3_600_000);
    const again = await createReport(simulator, week);
    expect((await readAllPages(simulator, again.id)).length).toBe(10);
  });

  it('the token of page three expires once; the same token then serves', async () => {
    simulator.advanceTime(4 * 3_600_000);
    simulator.setFaults({ pageTokenExpiresAtPage: 3 });
    const before = simulator.stats().faults['page-token-expired'] ?? 0;
    const { id } = await createReport(simulator, week);
    const first = await page(id);
    const second = await page(id, String(first.next));
    const expired = await page(id, String(second.next));
    expect(expired.status).toBe(410);
    expect(JSON.parse(expired.text)).toMatchObject({ error: { code: 'page_expired' } });
    expect((await page(id, String(second.next))).status).toBe(200);
    expect(simulator.stats().faults['page-token-expired']).toBe(before + 1);
  });

  it('answers an unknown page token 404, or 400 when so configured; an expired one 410, or 400', async () => {
    simulator.advanceTime(4 * 3_600_000);
    const { id } = await createReport(simulator, week);
    const unknown = await page(id, 'not-a-token');
    expect(unknown.status).toBe(404);
    simulator.setFaults({ pageTokenErrorStatus: 400, pageTokenExpiresAtPage: 2 });
    const first = await page(id);
    const refused = await page(id, 'not-a-token');
    expect(refused.status).toBe(400);
    expect(JSON.parse(refused.text)).toMatchObject({ error: { code: 'invalid_request' } });
    const expired = await page(id, String(first.next));
    expect(expired.status).toBe(400);
    simulator.setFaults({ pageTokenErrorStatus: null });
    expect((await page(id, String(first.next))).status).toBe(200);
    expect(() => simulator.setFaults({ pageTokenErrorStatus: 401 as 400 })).toThrow(/400, 404 or null/);
  });

  it('answers an expired page token 404 when so configured, while its report still answers', async () => {
    simulator.advanceTime(4 * 3_600_000);
    const { id } = await createReport(simulator, week);
    simulator.setFaults({ pageTokenErrorStatus: 404, pageTokenExpiresAtPage: 2 });
    const first = await page(id);
    const expired = await page(id, String(first.next));
    expect(expired.status).toBe(404);
    expect(JSON.parse(expired.text)).toMatchObject({ error: { code: 'page_not_found' } });
    expect((await page(id)).status).toBe(200);
    simulator.setFaults({ pageTokenErrorStatus: null });
  });

  it('refuses impossible pages', () => {
    expect(() => simulator.setFaults({ pageTokenExpiresAtPage: 1 })).toThrow(/from 2/);
    expect(() => simulator.setFaults({ reportGoneAfterPage: -1 })).toThrow(/from 0/);
  });
});

describe('a gate on pages', () => {
  it('lets the pages before it through, holds the next until released, and serves it as of then', async () => {
    simulator.advanceTime(4 * 3_600_000);
    const { id } = await createReport(simulator, week);
    const gate = simulator.holdAnswers('page', 1);
    const first = await page(id);
    expect(first.status).toBe(200);
    let answered = false;
    const second = page(id, String(first.next)).then((answer) => {
      answered = true;
      return answer;
    });
    await gate.held;
    expect(answered).toBe(false);
    gate.release();
    expect((await second).status).toBe(200);
    expect(idsOf((await second).text)).toEqual(simulator.referenceIds(week).slice(10, 20).map(BigInt));
  });
});

describe('served faults only', () => {
  it('counts a failed report once, when its FAILED status is served; slow responses when sent', async () => {
    const before = simulator.stats().faults;
    simulator.setFaults({ failReportShare: 1, latencyMs: 5 });
    const { id } = await createReport(simulator, { start_date: '2026-01-02', end_date: '2026-01-02' });
    expect(simulator.stats().faults['fail-report'] ?? 0).toBe(before['fail-report'] ?? 0);
    expect(JSON.parse((await page(id)).text)).toEqual({ id, status: 'FAILED' });
    await page(id);
    simulator.setFaults({ failReportShare: 0, latencyMs: 0 });
    const after = simulator.stats().faults;
    expect(after['fail-report']).toBe((before['fail-report'] ?? 0) + 1);
    expect(after.slow).toBe((before.slow ?? 0) + 3);
  });

  it('does not count a 429 whose client went away before it was sent', async () => {
    const before = simulator.stats().faults['rate-limit'] ?? 0;
    // The 429 is decided, and held until its client has gone.
    const gate = simulator.holdAnswers('request-fault', 0);
    simulator.setFaults({ rateLimitShare: 1 });
    const controller = new AbortController();
    const request = fetch(`${simulator.baseUrl}/reports/posts/dimensions`, {
      headers: headers(simulator),
      signal: controller.signal,
    }).catch(() => 'aborted');
    await gate.held;
    controller.abort();
    expect(await request).toBe('aborted');
    await gate.abandoned;
    simulator.setFaults({ rateLimitShare: 0 });
    gate.release();
    expect((await getText(simulator, `${simulator.baseUrl}/reports/posts/dimensions`)).status).toBe(200);
    expect(simulator.stats().faults['rate-limit'] ?? 0).toBe(before);
    // A 429 whose client stays is counted once it is sent.
    simulator.setFaults({ rateLimitShare: 1 });
    expect((await getText(simulator, `${simulator.baseUrl}/reports/posts/dimensions`)).status).toBe(429);
    simulator.setFaults({ rateLimitShare: 0 });
    expect(simulator.stats().faults['rate-limit']).toBe(before + 1);
  });
});

describe('field schedule', () => {
  it('a field appears from its date on; another carries whole numbers, then decimals', () => {
    const posts = simulator.referencePosts(week);
    for (const post of posts) {
      expect('saves_per_view' in post.fields).toBe(post.date >= '2026-03-03');
      const units = post.fields.watch_units;
      expect(units).toMatchObject({ number: expect.any(String) });
      const text = (units as { number: string }).number;
      expect(/^\d+$/.test(text)).toBe(post.date < '2026-03-04');
      expect(/^\d+\.\d\d$/.test(text)).toBe(post.date >= '2026-03-04');
    }
  });

  it('serves exactly what the reference holds, and a schedule changes no other field', async () => {
    const { id } = await createReport(simulator, week);
    const served = (await readAllPages(simulator, id)).flatMap((text) =>
      (JSON.parse(text) as { data: unknown[] }).data.map((record) => JSON.stringify(record)),
    );
    expect(served).toEqual(
      simulator.referencePosts(week).map((post) => JSON.stringify(JSON.parse(post.text))),
    );
    const plain = await startSimulator({ shapes: KIND_SHAPES, seed: 31, postsPerDay: 25 });
    try {
      const without = plain.referencePosts(week);
      const withSchedule = simulator.referencePosts(week);
      for (const [i, post] of without.entries()) {
        const { saves_per_view: _a, watch_units: _b, ...rest } = withSchedule[i]?.fields ?? {};
        expect(rest).toEqual(post.fields);
      }
    } finally {
      await plain.close();
    }
  });
});
