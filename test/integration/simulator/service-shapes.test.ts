/*
 * The unkind service the simulator is by default (src/simulator/service-shapes.ts), each shape seen on the wire:
 * a client tested against it meets them all unless a test turns one off.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { KIND_SHAPES, type RunningSimulator, startSimulator } from '../../../src/simulator/server.js';
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

const started: RunningSimulator[] = [];
afterAll(async () => {
  await Promise.all(started.map((s) => s.close()));
});

async function simulator(options: Parameters<typeof startSimulator>[0] = {}): Promise<RunningSimulator> {
  const sim = await startSimulator({ seed: 29, postsPerDay: 60, pageSize: 50, ...options });
  started.push(sim);
  return sim;
}

const WEEK = { start_date: '2026-01-05', end_date: '2026-01-11' };

describe('the unkind service (the default)', () => {
  it('takes only "Bearer <token>": another case of the scheme, or more than one space before the token, are refused', async () => {
    const sim = await simulator();
    const url = `${sim.baseUrl}/reports/posts/dimensions`;
    const statusWith = async (authorization: string) =>
      (await fetch(url, { headers: { authorization } })).status;
    expect(await statusWith(`Bearer ${sim.token}`)).toBe(200);
    for (const other of [
      `bearer ${sim.token}`,
      `BEARER ${sim.token}`,
      `Bearer  ${sim.token}`,
      `Bearer\t${sim.token}`,
    ]) {
      expect(await statusWith(other), other).toBe(401);
    }
    const lenient = await simulator({ shapes: { bearerScheme: 'lenient' } });
    const lenientUrl = `${lenient.baseUrl}/reports/posts/dimensions`;
    expect((await fetch(lenientUrl, { headers: { authorization: `bearer  ${lenient.token}` } })).status).toBe(
      200,
    );
  });

  it('names a 429’s wait in seconds, as an HTTP date, or not at all', async () => {
    const sim = await simulator();
    sim.setFaults({ rateLimitShare: 1, retryAfterSeconds: 2 });
    const forms = new Set<string>();
    for (let i = 0; i < 30; i += 1) {
      const response = await fetch(`${sim.baseUrl}/reports/posts/dimensions`, { headers: headers(sim) });
      await response.arrayBuffer();
      expect(response.status).toBe(429);
      const value = response.headers.get('retry-after');
      if (value === null) forms.add('absent');
      else if (value === '2') forms.add('seconds');
      else {
        // A date at least the wait ahead, on the wall clock, in whole seconds.
        const ahead = Date.parse(value) - Date.now(); // wall clock on purpose: an HTTP date is of the wall clock
        expect(value).toMatch(/^[A-Z][a-z]{2}, \d{2} [A-Z][a-z]{2} \d{4} \d{2}:\d{2}:\d{2} GMT$/);
        expect(ahead).toBeGreaterThan(1000);
        expect(ahead).toBeLessThanOrEqual(3000);
        forms.add('date');
      }
    }
    expect([...forms].sort()).toEqual(['absent', 'date', 'seconds']);
  });

  it('sends error bodies of every shape (a JSON object, plain text, a JSON array, nothing), one for each error', async () => {
    const shapeOf = (text: string) =>
      text === '' ? 'empty' : text.startsWith('{') ? 'object' : text.startsWith('[') ? 'array' : 'text';
    const shapes = new Set<string>();
    for (let seed = 1; seed <= 12; seed += 1) {
      const sim = await simulator({ seed });
      const seen = new Set<string>();
      for (let i = 0; i < 3; i += 1) {
        const { status, text } = await getText(sim, `${sim.baseUrl}/nowhere`);
        expect(status).toBe(404);
        seen.add(shapeOf(text));
      }
      // The same error, the same shape.
      expect(seen.size).toBe(1);
      for (const shape of seen) shapes.add(shape);
    }
    expect([...shapes].sort()).toEqual(['array', 'empty', 'object', 'text']);
  });

  it('answers 429 to a request that arrives while more than its limit are in flight', async () => {
    const sim = await simulator({ shapes: { inFlightLimit: 3 } });
    sim.setFaults({ latencyMs: 200 });
    const statuses = await Promise.all(
      Array.from({ length: 8 }, async () => {
        const response = await fetch(`${sim.baseUrl}/reports/posts/dimensions`, { headers: headers(sim) });
        await response.arrayBuffer();
        return response.status;
      }),
    );
    expect(statuses.filter((s) => s === 200)).toHaveLength(3);
    expect(statuses.filter((s) => s === 429)).toHaveLength(5);
    expect(sim.stats().faults['load-limit']).toBe(5);
  });

  it('serves ragged pages, short and empty before the last, which is never empty; every post once', async () => {
    const sim = await simulator();
    const { id } = await createReport(sim, WEEK);
    const pages = await readAllPages(sim, id);
    const sizes = pages.map((text) => idsOf(text).length);
    expect(
      sizes.slice(0, -1).some((n) => n > 0 && n < 50),
      JSON.stringify(sizes),
    ).toBe(true);
    expect(sizes.slice(0, -1), JSON.stringify(sizes)).toContain(0);
    expect(sizes.at(-1)).toBeGreaterThan(0);
    expect(Math.max(...sizes)).toBe(50);
    const ids = pages.flatMap((text) => idsOf(text).map(String));
    expect(ids).toEqual(sim.referenceIds(WEEK));
  });

  it('serves a report read again in another order across its pages: the same posts; a token keeps its reading', async () => {
    const sim = await simulator();
    const { id } = await createReport(sim, WEEK);
    const once = (await readAllPages(sim, id)).flatMap((text) => idsOf(text).map(String));
    // A second reading begins; a token of it, followed after a third reading began, still serves the second's order.
    const first = await getText(sim, reportUrl(sim, id));
    const token = nextPageOf(parseExact(first.text)) as string;
    await getText(sim, reportUrl(sim, id));
    const rest = await (async () => {
      const ids: string[] = [];
      let page: string | null = token;
      while (page !== null) {
        const { text } = await getText(sim, reportUrl(sim, id, page));
        ids.push(...idsOf(text).map(String));
        page = nextPageOf(parseExact(text)) as string | null;
      }
      return ids;
    })();
    const again = [...idsOf(first.text).map(String), ...rest];
    expect(once).toEqual(sim.referenceIds(WEEK));
    expect(again).not.toEqual(once);
    expect([...again].sort()).toEqual([...once].sort());
    expect(new Set(again).size).toBe(again.length);
  });

  it('serves a first reading in an order of its own when so configured (off by default), the same posts', async () => {
    const sim = await simulator({ shapes: { firstOrder: 'shuffled', rereadOrder: 'same' } });
    const { id } = await createReport(sim, WEEK);
    const once = (await readAllPages(sim, id)).flatMap((text) => idsOf(text).map(String));
    const again = (await readAllPages(sim, id)).flatMap((text) => idsOf(text).map(String));
    const reference = sim.referenceIds(WEEK);
    expect(once).not.toEqual(reference);
    expect(again).toEqual(once);
    expect([...once].sort()).toEqual([...reference].sort());
  });

  it('expires reports after 12 h and page tokens after 1 h, on its clock', async () => {
    const sim = await simulator();
    const { id } = await createReport(sim, WEEK);
    const first = await getText(sim, reportUrl(sim, id));
    const token = nextPageOf(parseExact(first.text)) as string;
    sim.advanceTime(3_600_000);
    expect((await getText(sim, reportUrl(sim, id, token))).status).toBe(410);
    sim.advanceTime(11 * 3_600_000);
    expect((await getText(sim, reportUrl(sim, id))).status).toBe(404);
  });

  it('keeps a reuse period from the report’s creation, or sliding with each identical call when so configured', async () => {
    for (const reuseSlides of [false, true]) {
      const sim = await simulator({ reportReuseMs: 3_600_000, shapes: { reuseSlides } });
      const { id } = await createReport(sim, WEEK);
      for (let i = 0; i < 3; i += 1) {
        sim.advanceTime(40 * 60_000);
        const again = await createReport(sim, WEEK);
        // 40, 80 and 120 minutes after creation; 40 minutes after the call before.
        if (reuseSlides || i === 0) expect(again.id, `slides ${reuseSlides}, call ${i}`).toBe(id);
        else expect(again.id, `slides ${reuseSlides}, call ${i}`).not.toBe(id);
      }
    }
  });

  it('is the kindest service with KIND_SHAPES: full pages, one order, seconds, object bodies, no load limit', async () => {
    const sim = await simulator({ shapes: KIND_SHAPES });
    const { id } = await createReport(sim, WEEK);
    const sizes = (await readAllPages(sim, id)).map((text) => idsOf(text).length);
    expect(sizes.slice(0, -1).every((n) => n === 50)).toBe(true);
    const { text } = await getText(sim, `${sim.baseUrl}/nowhere`);
    expect(JSON.parse(text)).toMatchObject({ error: { code: 'not_found' } });
  });

  it('refuses a shape it does not know, naming it', async () => {
    await expect(startSimulator({ shapes: { pageFill: 'jagged' as 'full' } })).rejects.toThrow(
      /shape pageFill must be one of ragged, full, got "jagged"/,
    );
    await expect(startSimulator({ shapes: { inFlightLimit: 0 } })).rejects.toThrow(/shape inFlightLimit/);
    await expect(startSimulator({ shapes: { retryAfterForms: [] } })).rejects.toThrow(/retryAfterForms/);
  });
});
