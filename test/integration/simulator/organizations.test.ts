import { stringify } from 'lossless-json';
import { afterAll, describe, expect, it } from 'vitest';
import { createOrganization, dimensionsBody } from '../../../src/simulator/organization.js';
import {
  KIND_SHAPES,
  type ReportParams,
  type RunningSimulator,
  startSimulator,
} from '../../../src/simulator/server.js';
import {
  createReport,
  getText,
  idsOf,
  nextPageOf,
  parseExact,
  readAllPages,
  reportUrl,
} from './sim-client.js';

const A = 'org-a-token';
const B = 'org-b-token';
const C = 'org-c-token';
const TIERS = [{ name: 'Tier', values: ['Gold', 'Silver', 'Bronze'] }];

// C's seed is A's plus 97: the same post ids on the same dates, other posts.
const simulator = await startSimulator({
  shapes: KIND_SHAPES,
  seed: 5,
  postsPerDay: 40,
  pageSize: 100,
  organizations: [
    { token: A, seed: 11 },
    { token: B, seed: 12, postsPerDay: 25, segmentDimensions: TIERS },
    { token: C, seed: 11 + 97 },
  ],
});
afterAll(() => simulator.close());

/** The simulator as seen by the client of one organization: the sim-client helpers send `token`. */
function as(token: string): RunningSimulator {
  return { ...simulator, token };
}

function get(token: string, url: string): Promise<Response> {
  return fetch(url, { headers: { authorization: `Bearer ${token}` } });
}

async function errorCode(response: Response): Promise<unknown> {
  return ((await response.json()) as { error?: { code?: unknown } }).error?.code;
}

/** The records of every page of a report, as canonical JSON texts. */
async function servedRecords(token: string, id: string): Promise<string[]> {
  const pages = await readAllPages(as(token), id);
  return pages.flatMap((text) =>
    (parseExact(text) as { data: unknown[] }).data.map((record) => stringify(record) ?? ''),
  );
}

function referenceRecords(params: ReportParams, token: string): string[] {
  return simulator.referencePosts(params, token).map((post) => stringify(parseExact(post.text)) ?? '');
}

describe('a simulator serving several organizations, one token each', () => {
  const week: ReportParams = { start_date: '2026-03-02', end_date: '2026-03-08' };

  it('serves the tokens it was given, the first one as its token', () => {
    expect(simulator.tokens).toEqual([A, B, C]);
    expect(simulator.token).toBe(A);
  });

  it('answers each token with the dimensions of its own organization', async () => {
    const expected: Record<string, string> = {
      [A]: dimensionsBody(createOrganization(11)),
      [B]: dimensionsBody(createOrganization(12, TIERS)),
      [C]: dimensionsBody(createOrganization(108)),
    };
    for (const token of [A, B, C]) {
      const response = await get(token, `${simulator.baseUrl}/reports/posts/dimensions`);
      expect(response.status).toBe(200);
      expect(await response.json()).toEqual(JSON.parse(expected[token] ?? ''));
    }
    const b = JSON.parse(expected[B] ?? '') as { custom_segments: unknown };
    expect(b.custom_segments).toEqual(TIERS);
  });

  it("serves each token its own organization's posts, exactly as referencePosts(params, token)", async () => {
    const served: Record<string, string[]> = {};
    for (const token of [A, B, C]) {
      const report = await createReport(as(token), week);
      const records = await servedRecords(token, report.id);
      expect(records).toEqual(referenceRecords(week, token));
      served[token] = records;
    }
    expect(served[A]).toHaveLength(7 * 40);
    expect(served[B]).toHaveLength(7 * 25);
    expect(served[C]).toHaveLength(7 * 40);
    expect(simulator.referencePosts(week)).toEqual(simulator.referencePosts(week, A));

    const idsA = simulator.referenceIds(week, A);
    const idsB = new Set(simulator.referenceIds(week, B));
    expect(idsA.filter((id) => idsB.has(id))).toEqual([]);
    // Seeds 97 apart: the same ids, other posts, which a connector must keep apart by organization.
    expect(simulator.referenceIds(week, C)).toEqual(idsA);
    const textsC = new Set(simulator.referencePosts(week, C).map((post) => post.text));
    expect(simulator.referencePosts(week, A).filter((post) => textsC.has(post.text))).toEqual([]);
  });

  it('finds a report, and its pages, only under the token that created it', async () => {
    const params: ReportParams = { start_date: '2026-04-01', end_date: '2026-04-03' };
    const report = await createReport(as(A), params);
    const first = await getText(as(A), reportUrl(simulator, report.id));
    expect(first.status).toBe(200);
    const next = nextPageOf(parseExact(first.text));
    expect(typeof next).toBe('string');

    for (const token of [B, C]) {
      const response = await get(token, reportUrl(simulator, report.id));
      expect(response.status).toBe(404);
      expect(await errorCode(response)).toBe('report_not_found');
      const page = await get(token, reportUrl(simulator, report.id, String(next)));
      expect(page.status).toBe(404);
      expect(await errorCode(page)).toBe('report_not_found');
    }
    expect((await getText(as(A), reportUrl(simulator, report.id, String(next)))).status).toBe(200);
  });

  it('answers 401 to a token no organization has, even one close to a served token', async () => {
    for (const token of ['org-d-token', 'org-a-toke', `${A}x`, 'sim-token']) {
      const response = await get(token, `${simulator.baseUrl}/reports/posts/dimensions`);
      expect(response.status).toBe(401);
      expect(await errorCode(response)).toBe('unauthorized');
    }
    expect(() => simulator.referencePosts(week, 'org-d-token')).toThrow(/"org-d-token"/);
  });

  it('gives identical creation calls with different tokens different reports, each token reusing its own', async () => {
    const params: ReportParams = { start_date: '2026-05-04', end_date: '2026-05-05' };
    const created = simulator.stats().reportsCreated;
    const createdByA = simulator.stats(A).reportsCreated;
    const ids: string[] = [];
    for (const token of [A, B, C]) ids.push((await createReport(as(token), params)).id);
    expect(new Set(ids).size).toBe(3);
    for (const [i, token] of [A, B, C].entries()) {
      expect((await createReport(as(token), params)).id).toBe(ids[i]);
    }
    expect(simulator.stats().reportsCreated).toBe(created + 3);
    expect(simulator.stats(A).reportsCreated).toBe(createdByA + 1);
    const records = await servedRecords(B, ids[1] ?? '');
    expect(records).toEqual(referenceRecords(params, B));
  });

  it("keeps each organization's late posts and revisions to itself", async () => {
    const params: ReportParams = { start_date: '2026-06-10', end_date: '2026-06-10' };
    const before = { A: simulator.referencePosts(params, A), C: simulator.referencePosts(params, C) };
    simulator.addPosts('2026-06-10', 3, B);
    simulator.reviseFigures('2026-06-10', C);
    expect(simulator.referencePosts(params, A)).toEqual(before.A);
    expect(simulator.referenceIds(params, B)).toHaveLength(25 + 3);
    const revised = simulator.referencePosts(params, C);
    expect(revised.map((post) => post.id)).toEqual(before.C.map((post) => post.id));
    expect(revised.map((post) => post.text)).not.toEqual(before.C.map((post) => post.text));

    const report = await createReport(as(B), params);
    const ids = (await readAllPages(as(B), report.id)).flatMap((text) => idsOf(text));
    expect(ids).toEqual(simulator.referenceIds(params, B).map((id) => BigInt(id)));
    const fromC = await createReport(as(C), params);
    expect(await servedRecords(C, fromC.id)).toEqual(referenceRecords(params, C));
  });

  it("counts each token's requests apart from the others', and a wrong token's in the whole only", async () => {
    const whole = simulator.stats();
    const ofA = simulator.stats(A);
    const ofB = simulator.stats(B);
    await get('wrong-token', `${simulator.baseUrl}/reports/posts/dimensions`);
    await get(B, `${simulator.baseUrl}/reports/posts/dimensions`);
    await get(B, `${simulator.baseUrl}/reports/posts/dimensions`);

    expect(simulator.stats().requests).toBe(whole.requests + 3);
    expect(simulator.stats().byStatus['401']).toBe((whole.byStatus['401'] ?? 0) + 1);
    expect(simulator.stats(A)).toEqual(ofA);
    const nowB = simulator.stats(B);
    expect(nowB.requests).toBe(ofB.requests + 2);
    expect(nowB.byRoute['GET /reports/posts/dimensions']).toBe(
      (ofB.byRoute['GET /reports/posts/dimensions'] ?? 0) + 2,
    );
    expect(nowB.byStatus['401']).toBe(ofB.byStatus['401']);
    expect(simulator.requests(B).every((request) => request.authorization === `Bearer ${B}`)).toBe(true);
    expect(simulator.requests(B).length).toBe(nowB.requests);
  });

  it('rejects the token of one organization while the others stay accepted', async () => {
    const url = `${simulator.baseUrl}/reports/posts/dimensions`;
    simulator.rejectToken({ token: B, status: 403 });
    try {
      expect((await get(B, url)).status).toBe(403);
      expect((await get(A, url)).status).toBe(200);
      expect((await get(C, url)).status).toBe(200);
      expect(simulator.stats(B).faults['token-rejected-403']).toBe(1);
      expect(simulator.stats(A).faults['token-rejected-403']).toBeUndefined();
    } finally {
      simulator.acceptToken(B);
    }
    expect((await get(B, url)).status).toBe(200);
  });

  it('refuses the reports of one organization only', async () => {
    const params: ReportParams = { start_date: '2026-07-01', end_date: '2026-07-01' };
    simulator.refuseReports([params.start_date], 'segment value "Gold" no longer exists', B);
    try {
      const body = JSON.stringify(params);
      const headers = (token: string) => ({
        authorization: `Bearer ${token}`,
        'content-type': 'application/json',
      });
      const url = `${simulator.baseUrl}/reports/posts`;
      const refused = await fetch(url, { method: 'POST', headers: headers(B), body });
      expect(refused.status).toBe(400);
      const accepted = await fetch(url, { method: 'POST', headers: headers(A), body });
      expect(accepted.status).toBe(200);
    } finally {
      simulator.refuseReports([], undefined, B);
    }
  });
});

describe('organizations of one seed, with numeric report ids', () => {
  it('serve identical posts under their own tokens, and never find the report of the other', async () => {
    const twins = await startSimulator({
      postsPerDay: 10,
      reportIds: 'numeric',
      organizations: [
        { token: 'twin-1', seed: 4 },
        { token: 'twin-2', seed: 4 },
      ],
    });
    try {
      const day: ReportParams = { start_date: '2026-02-02', end_date: '2026-02-02' };
      expect(twins.referencePosts(day, 'twin-2')).toEqual(twins.referencePosts(day, 'twin-1'));
      // A numeric id is past 2^53: read as text, never as a JavaScript number.
      const create = async (token: string): Promise<string> => {
        const response = await fetch(`${twins.baseUrl}/reports/posts`, {
          method: 'POST',
          headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
          body: JSON.stringify(day),
        });
        const text = await response.text();
        expect(response.status).toBe(200);
        return /^\{"id":(\d+),/.exec(text)?.[1] ?? text;
      };
      const one = await create('twin-1');
      const two = await create('twin-2');
      expect(one).toMatch(/^\d+$/);
      expect(two).not.toBe(one);
      const other = await fetch(reportUrl(twins, one), { headers: { authorization: 'Bearer twin-2' } });
      expect(other.status).toBe(404);
      const own = await getText({ ...twins, token: 'twin-1' }, reportUrl(twins, one));
      expect(own.status).toBe(200);
      expect(idsOf(own.text)).toEqual(twins.referenceIds(day, 'twin-1').map((id) => BigInt(id)));
    } finally {
      await twins.close();
    }
  });
});
