import { afterAll, describe, expect, it } from 'vitest';
import { KIND_SHAPES, type ReportParams, startSimulator } from '../../../src/simulator/server.js';
import { createReport, headers, readAllPages } from './sim-client.js';

const HOURS_4 = 4 * 3_600_000;
const simulator = await startSimulator({ shapes: KIND_SHAPES, seed: 8, postsPerDay: 30 });
afterAll(() => simulator.close());

/** A report's records as exact JSON texts, in served order. */
async function served(params: ReportParams): Promise<{ id: string; records: string[] }> {
  const { id } = await createReport(simulator, params);
  const records = (await readAllPages(simulator, id)).flatMap((text) => {
    const body = JSON.parse(text) as { data: unknown[] };
    return body.data.map((record) => JSON.stringify(record));
  });
  return { id, records };
}

const texts = (params: ReportParams) =>
  simulator.referencePosts(params).map((post) => JSON.stringify(JSON.parse(post.text)));

describe('figure revisions (late data)', () => {
  it('serves the new figures in reports created after a revision; older reports and other days keep theirs', async () => {
    const week: ReportParams = { start_date: '2026-05-04', end_date: '2026-05-10' };
    const before = await served(week);
    expect(before.records).toEqual(texts(week));

    simulator.reviseFigures('2026-05-06');
    const after = texts(week);
    const changed = after.filter((text, i) => text !== before.records[i]);
    expect(changed.length).toBeGreaterThan(0);
    // Only the revised day changed, and every post is still there, with its identity.
    expect(changed.every((text) => text.includes('"date_captured":"2026-05-06"'))).toBe(true);
    const ids = (records: string[]) => records.map((text) => /"platform_post_id":(\d+)/.exec(text)?.[1]);
    expect(ids(after)).toEqual(ids(before.records));

    // Within the reuse period the API returns the earlier report, old figures included.
    const reused = await served(week);
    expect(reused.id).toBe(before.id);
    expect(reused.records).toEqual(before.records);

    simulator.advanceTime(HOURS_4);
    const fresh = await served(week);
    expect(fresh.id).not.toBe(before.id);
    expect(fresh.records).toEqual(after);
    // The earlier report still serves what it served.
    const again = (await readAllPages(simulator, before.id)).flatMap((text) =>
      (JSON.parse(text) as { data: unknown[] }).data.map((record) => JSON.stringify(record)),
    );
    expect(again).toEqual(before.records);

    simulator.reviseFigures('2026-05-06');
    expect(texts(week)).not.toEqual(after);
  });
});

describe("the simulator's clock", () => {
  it('starts at the instant it is given, runs on from there, and advanceTime moves it', async () => {
    const noon = Date.parse('2026-11-25T12:00:00Z');
    const fixed = await startSimulator({ shapes: KIND_SHAPES, seed: 8, now: '2026-11-25T14:00:00+02:00' });
    try {
      const started = Date.parse(fixed.now());
      expect(started).toBeGreaterThanOrEqual(noon);
      expect(started - noon).toBeLessThan(60_000);
      await new Promise((resolve) => setTimeout(resolve, 20));
      expect(Date.parse(fixed.now())).toBeGreaterThan(started);
      fixed.advanceTime(13 * 3_600_000);
      expect(fixed.now().slice(0, 13)).toBe('2026-11-26T01');
    } finally {
      await fixed.close();
    }
  });

  it('is the system clock unless given an instant', async () => {
    const plain = await startSimulator({ shapes: KIND_SHAPES, seed: 8 });
    try {
      const wallClock = Date.now(); // wall clock on purpose: the simulator's default clock is the system one
      expect(Math.abs(Date.parse(plain.now()) - wallClock)).toBeLessThan(60_000);
    } finally {
      await plain.close();
    }
  });

  it('refuses an instant without its zone, or no instant at all', async () => {
    for (const now of ['2026-11-25T12:00:00', 'noon', '']) {
      await expect(startSimulator({ now })).rejects.toThrow(/now must be an ISO 8601 instant with its zone/);
    }
  });
});

describe('an outage of report creation', () => {
  const params: ReportParams = { start_date: '2026-07-01', end_date: '2026-07-02' };
  const create = () =>
    fetch(`${simulator.baseUrl}/reports/posts`, {
      method: 'POST',
      headers: headers(simulator),
      body: JSON.stringify(params),
    });

  it('answers 503 on creation until switched off, while existing reports keep serving', async () => {
    const existing = await createReport(simulator, params);
    simulator.startCreationOutage();
    const refused = await create();
    expect(refused.status).toBe(503);
    expect(await refused.json()).toMatchObject({ error: { code: 'service_unavailable' } });
    expect(await readAllPages(simulator, existing.id)).toHaveLength(1);
    simulator.advanceTime(HOURS_4);
    expect((await create()).status).toBe(503);
    simulator.endCreationOutage();
    expect((await create()).status).toBe(200);
    expect(simulator.stats().faults['creation-outage']).toBe(2);
  });

  it('ends by itself after its period on the simulator clock', async () => {
    simulator.startCreationOutage(60_000);
    expect((await create()).status).toBe(503);
    simulator.advanceTime(59_000);
    expect((await create()).status).toBe(503);
    simulator.advanceTime(1_000);
    expect((await create()).status).toBe(200);
  });

  it('ends by itself after a number of refused creation calls, whatever the clock says', async () => {
    simulator.startCreationOutage({ calls: 2 });
    expect((await create()).status).toBe(503);
    simulator.advanceTime(HOURS_4);
    expect((await create()).status).toBe(503);
    expect((await create()).status).toBe(200);
    expect(() => simulator.startCreationOutage({ calls: 0 })).toThrow(/from 1/);
  });
});

describe('what the simulator served, as it is served', () => {
  it('tells a listener of each creation call answered, each page and each fault, until it stops listening', async () => {
    const heard: string[] = [];
    const stop = simulator.onServed((kind) => heard.push(kind));
    simulator.startCreationOutage({ calls: 1 });
    const params: ReportParams = { start_date: '2025-06-02', end_date: '2025-06-02' };
    expect(
      (
        await fetch(`${simulator.baseUrl}/reports/posts`, {
          method: 'POST',
          headers: headers(simulator),
          body: JSON.stringify(params),
        })
      ).status,
    ).toBe(503);
    simulator.advanceTime(HOURS_4);
    const { id } = await createReport(simulator, params);
    expect(await readAllPages(simulator, id)).toHaveLength(1);
    stop();
    await createReport(simulator, params);
    expect(heard).toEqual(['creation-outage', 'creation', 'page']);
    // A page with a next one says so too.
    const many: string[] = [];
    const stopMany = simulator.onServed((kind) => many.push(kind));
    simulator.advanceTime(HOURS_4);
    const month = await createReport(simulator, { start_date: '2025-06-01', end_date: '2025-07-31' });
    const pages = await readAllPages(simulator, month.id);
    stopMany();
    expect(pages.length).toBeGreaterThan(1);
    expect(many).toEqual([
      'creation',
      ...pages.flatMap((_, i) => (i < pages.length - 1 ? ['page', 'page-with-next'] : ['page'])),
    ]);
  });
});
