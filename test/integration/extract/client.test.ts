import { gzipSync } from 'node:zlib';
import { afterAll, beforeEach, describe, expect, it } from 'vitest';
import { ApiError } from '../../../src/errors.js';
import { fetchDimensions } from '../../../src/extract/dimensions.js';
import { reportPath } from '../../../src/extract/pager.js';
import { createReport } from '../../../src/extract/report.js';
import { BufferPool } from '../../../src/model/buffer-pool.js';
import { type RunningSimulator, startSimulator } from '../../../src/simulator/server.js';
import { VERSION } from '../../../src/version.js';
import { type HandMadeBody, startPageServer } from '../../helpers/page-server.js';
import { clientFor, failure } from './harness.js';

const TOKEN = 'tok-Zq8x1-very-secret';
// Retry-After in seconds, each 429 a drawn share's, and error bodies as JSON objects (tests read the API's
// messages): the tests below of Retry-After's other forms and of load say so; error-bodies.test.ts has the others.
const sim: RunningSimulator = await startSimulator({
  seed: 7,
  token: TOKEN,
  shapes: { retryAfterForms: ['seconds'], inFlightLimit: null, errorBodyShapes: ['object'] },
});
afterAll(() => sim.close());

const NO_FAULTS = { rateLimitShare: 0, serverErrorShare: 0, dropShare: 0, retryAfterSeconds: 0 };

function requestsSince(before: number) {
  return sim.stats().requests - before;
}

describe('ApiClient against the simulator', () => {
  beforeEach(() => sim.setFaults(NO_FAULTS));

  it('sends the bearer header and its name and version on every request, and never an access_token', async () => {
    const { client } = clientFor(sim);
    await fetchDimensions(client);
    await createReport(client, { start: '2026-01-01', end: '2026-01-02' }, {});
    const recorded = sim.requests();
    expect(recorded.length).toBeGreaterThanOrEqual(2);
    for (const request of recorded) {
      expect(request.authorization).toBe(`Bearer ${TOKEN}`);
      expect(request.userAgent).toBe(`post-reports-etl/${VERSION}`);
      expect(request.query).not.toContain('access_token');
      expect(`${request.path}?${request.query}`).not.toContain(TOKEN);
      if (request.method === 'POST') expect(request.contentType).toMatch(/^application\/json/);
    }
  });

  it('honours Retry-After on 429 and then succeeds', async () => {
    const { client, retries } = clientFor(sim, { POST_REPORTS_MAX_ATTEMPTS: '8' });
    sim.setFaults({ rateLimitShare: 0.3, retryAfterSeconds: 0 });
    const limitedBefore = sim.stats().faults['rate-limit'] ?? 0;
    for (let i = 0; i < 8; i += 1) await fetchDimensions(client);
    const limited = (sim.stats().faults['rate-limit'] ?? 0) - limitedBefore;
    expect(limited).toBeGreaterThan(0);
    expect(retries.filter((r) => r.error.status === 429)).toHaveLength(limited);
    // Retry-After: 0 asks for no wait, and the client took it instead of its own backoff.
    expect(retries.every((r) => r.delayMs === 0)).toBe(true);
    expect(retries).toHaveLength(limited);
  });

  it('waits as long as Retry-After says', async () => {
    const { client, retries } = clientFor(sim, { POST_REPORTS_MAX_ATTEMPTS: '8' });
    sim.setFaults({ rateLimitShare: 0.5, retryAfterSeconds: 1 });
    for (let i = 0; i < 10 && retries.length === 0; i += 1) await fetchDimensions(client);
    expect(retries.length).toBeGreaterThan(0);
    expect(retries.map((r) => [r.error.status, r.delayMs])).toEqual(retries.map(() => [429, 1000]));
  });

  it('waits until a Retry-After date, and backs off on its own without one', async () => {
    for (const form of ['date', 'absent'] as const) {
      const other = await startSimulator({ seed: 7, shapes: { retryAfterForms: [form] } });
      try {
        const { client, retries } = clientFor(other, { POST_REPORTS_MAX_ATTEMPTS: '8' });
        other.setFaults({ rateLimitShare: 0.5, retryAfterSeconds: 1 });
        for (let i = 0; i < 10 && retries.length === 0; i += 1) await fetchDimensions(client);
        expect(retries.length, form).toBeGreaterThan(0);
        for (const retry of retries) {
          expect(retry.error.status, form).toBe(429);
          // A date names a whole second at least 1 s ahead; without a header the client's own backoff (from 1 ms).
          if (form === 'date') expect(retry.delayMs).toBeGreaterThanOrEqual(1);
          if (form === 'date') expect(retry.delayMs).toBeLessThanOrEqual(2000);
          else expect(retry.delayMs).toBeLessThan(1000);
        }
      } finally {
        await other.close();
      }
    }
  });

  it('rides out 429s the service answers to load (more requests in flight than it takes)', async () => {
    const busy = await startSimulator({ seed: 7, shapes: { inFlightLimit: 2 } });
    try {
      const { client, retries } = clientFor(busy, { POST_REPORTS_MAX_ATTEMPTS: '10' });
      // Answers that take a while: requests sent together are in flight together.
      busy.setFaults({ latencyMs: 100 });
      const answers = await Promise.all(Array.from({ length: 8 }, () => fetchDimensions(client)));
      expect(answers.every((a) => (a.brands?.length ?? 0) > 0)).toBe(true);
      expect(busy.stats().faults['load-limit'] ?? 0).toBeGreaterThan(0);
      expect(retries.filter((r) => r.error.status === 429).length).toBe(busy.stats().faults['load-limit']);
    } finally {
      await busy.close();
    }
  });

  it('retries 5xx answers and dropped connections', async () => {
    const { client, retries } = clientFor(sim, { POST_REPORTS_MAX_ATTEMPTS: '8' });
    sim.setFaults({ serverErrorShare: 0.3, dropShare: 0.3 });
    for (let i = 0; i < 8; i += 1) await fetchDimensions(client);
    const codes = new Set(retries.map((r) => r.error.code));
    expect(codes).toContain('API_NETWORK_ERROR');
    expect(codes).toContain('API_HTTP_ERROR');
    expect(retries.some((r) => (r.error.status ?? 0) >= 500)).toBe(true);
  });

  it('gives up after maxAttempts with the last error', async () => {
    const { client } = clientFor(sim, { POST_REPORTS_MAX_ATTEMPTS: '3' });
    sim.setFaults({ serverErrorShare: 1 });
    const before = sim.stats().requests;
    const error = await failure(() => fetchDimensions(client));
    expect(error).toBeInstanceOf(ApiError);
    expect((error as ApiError).code).toBe('API_HTTP_ERROR');
    expect((error as ApiError).message).toMatch(
      /^GET \/reports\/posts\/dimensions answered 50\d \(attempt 3\): /,
    );
    expect(requestsSince(before)).toBe(3);
  });

  it('never retries 401, and keeps the token out of messages and logs', async () => {
    const { client, lines } = clientFor(sim, { POST_REPORTS_TOKEN: 'wrong-token-abc' });
    const before = sim.stats().requests;
    const error = (await failure(() => fetchDimensions(client))) as ApiError;
    expect(requestsSince(before)).toBe(1);
    expect(error.code).toBe('TOKEN_REJECTED');
    expect(error.status).toBe(401);
    expect(error.endpoint).toBe('GET /reports/posts/dimensions');
    expect(error.body).toContain('the bearer token is not valid');
    expect(error.message).toContain('401');
    expect(`${error.message} ${JSON.stringify(error)} ${lines.join('')}`).not.toContain('wrong-token-abc');
  });

  it('never retries 400 and reports the server body', async () => {
    const { client } = clientFor(sim);
    const before = sim.stats().requests;
    const error = (await failure(() =>
      createReport(
        client,
        { start: '2026-01-01', end: '2026-01-01' },
        {
          customSegments: [{ name: 'Nope', values: ['x'] }],
        },
      ),
    )) as ApiError;
    expect(requestsSince(before)).toBe(1);
    expect(error.status).toBe(400);
    expect(error.message).toMatch(/^POST \/reports\/posts answered 400 \(attempt 1\): .*Nope/);
  });

  it('stops waiting when aborted', async () => {
    const { client } = clientFor(sim);
    sim.setFaults({ latencyMs: 2000 });
    try {
      const controller = new AbortController();
      const pending = fetchDimensions(client, controller.signal);
      setTimeout(() => controller.abort(new Error('operator stop')), 50);
      const error = (await failure(() => pending)) as ApiError;
      expect(error.code).toBe('ABORTED');
      expect(error.message).toContain('operator stop');
    } finally {
      sim.setFaults({ latencyMs: 0 });
    }
  });

  it('keeps the token out of every log line of a faulty session', async () => {
    const { client, lines } = clientFor(sim, { POST_REPORTS_MAX_ATTEMPTS: '10' });
    sim.setFaults({ serverErrorShare: 0.3, dropShare: 0.2, rateLimitShare: 0.2 });
    for (let i = 0; i < 5; i += 1) await fetchDimensions(client);
    expect(lines.length).toBeGreaterThan(5);
    for (const line of lines) expect(line).not.toContain(TOKEN);
  });
});

describe('ApiClient: a body as bytes', () => {
  const page = '{"a":"é日😀","b":[1.50,"\\u00e9"]}';
  const utf8 = (text: string) => Buffer.from(text, 'utf8');
  const bom = [0xef, 0xbb, 0xbf];
  /** Each body, and the label of the decoder that makes its text. */
  const bodies: Record<string, HandMadeBody & { body: Uint8Array; label: string }> = {
    plain: { body: utf8(page), label: 'utf-8' },
    'no charset': { body: utf8(page), contentType: 'application/json', label: 'utf-8' },
    'another label': { body: utf8(page), contentType: 'application/json; charset="UTF8"', label: 'utf8' },
    'a label decoded': {
      body: utf8(page),
      contentType: 'application/json; charset=unicode-1-1-utf-8',
      label: 'unicode-1-1-utf-8',
    },
    bom: { body: Buffer.concat([Buffer.from(bom), utf8(page)]), label: 'utf-8' },
    'two boms': { body: Buffer.concat([Buffer.from([...bom, ...bom]), utf8(page)]), label: 'utf-8' },
    'not utf-8': {
      body: Buffer.concat([utf8('{"a":"x'), Buffer.from([0xff, 0xc3]), utf8('\uFFFDy"}')]),
      label: 'utf-8',
    },
    'cut within a character': { body: utf8(page).subarray(0, utf8(page).indexOf(0xe6) + 1), label: 'utf-8' },
    'a surrogate': {
      body: Buffer.concat([utf8('{"a":"'), Buffer.from([0xed, 0xa0, 0x80]), utf8('"}')]),
      label: 'utf-8',
    },
    latin1: {
      body: Buffer.from('{"a":"café ÿ"}', 'latin1'),
      contentType: 'application/json; charset=iso-8859-1',
      label: 'iso-8859-1',
    },
    'utf-16': {
      body: Buffer.from(page, 'utf16le'),
      contentType: 'application/json; charset=utf-16le',
      label: 'utf-16le',
    },
    'not json': { body: utf8('<html>é</html>'), label: 'utf-8' },
    short: { body: utf8('{}'), label: 'utf-8' },
    'unknown charset': { body: utf8(page), contentType: 'application/json; charset=x-nope', label: 'utf-8' },
  };

  it('hands on the UTF-8 of the text it reads, with the warnings, sizes and errors of the text', async () => {
    const server = await startPageServer({ pages: () => bodies });
    let warned = 0;
    let failed = 0;
    try {
      for (const [name, { body, label }] of Object.entries(bodies)) {
        const query = { page: name };
        // The text way, every other answer's: getJson.
        const asText = clientFor(server);
        const asBytes = clientFor(server);
        const parsed = await asText.client.getJson(reportPath('w'), { query }).catch((e: Error) => e);
        const deferred = await asBytes.client
          .getDeferredJson(reportPath('w'), { query })
          .catch((e: Error) => e);
        const warnings = (lines: string[]) =>
          lines
            .map((line) => JSON.parse(line) as Record<string, unknown>)
            .filter((line) => line.level === 40 || line.msg === 'response')
            .map(({ msg, charset, count, bytes: size }) => ({ msg, charset, count, size }));
        expect(warnings(asBytes.lines), name).toEqual(warnings(asText.lines));
        if (warnings(asText.lines).some((line) => line.msg !== 'response')) warned++;
        if (deferred instanceof Error) {
          expect(String(deferred), name).toBe(String(parsed));
          failed++;
          continue;
        }
        const text = new TextDecoder(label).decode(body);
        expect(deferred.text, name).toBe(text);
        expect(deferred.bytes, name).toBe(body.length);
        expect(deferred.utf8.equals(utf8(text)), name).toBe(true);
        let late: unknown;
        try {
          late = deferred.parse();
        } catch (error) {
          late = error;
        }
        if (parsed instanceof Error) expect(String(late), name).toBe(String(parsed));
        else expect(late, name).toEqual(parsed);
      }
    } finally {
      await server.close();
    }
    // The bytes that are not UTF-8 (three bodies) were replaced and logged; the unknown charset refused.
    expect([warned, failed]).toEqual([3, 1]);
  });

  it('reads a body of declared length into memory of a pool, and gives back what it does not keep', async () => {
    const sized = (body: Uint8Array, headers: Record<string, string | number>): HandMadeBody => ({
      write: (response) => response.writeHead(200, { ...headers, 'content-length': body.length }).end(body),
    });
    const all: Record<string, HandMadeBody> = {
      ...Object.fromEntries(
        Object.entries(bodies).map(([name, entry]) => [
          name,
          sized(entry.body, {
            'content-type':
              ('contentType' in entry && entry.contentType) || 'application/json; charset=utf-8',
          }),
        ]),
      ),
      // Decoded as it arrives: many more bytes than its content-length declares, read on into a larger buffer.
      gzip: sized(gzipSync(utf8(JSON.stringify({ a: 'é'.repeat(50_000) }))), {
        'content-type': 'application/json; charset=utf-8',
        'content-encoding': 'gzip',
      }),
      // No length declared: read as chunks, as before.
      chunked: { body: utf8(page) },
    };
    const server = await startPageServer({ pages: () => all });
    const taken: ArrayBuffer[] = [];
    const given: ArrayBufferLike[] = [];
    const pool = new (class extends BufferPool {
      override take(bytes: number): ArrayBuffer {
        const buffer = super.take(bytes);
        taken.push(buffer);
        return buffer;
      }
      override give(view: ArrayBufferView | undefined): void {
        if (view !== undefined) given.push(view.buffer);
        super.give(view);
      }
    })();
    let kept = 0;
    try {
      for (const name of Object.keys(all)) {
        const query = { page: name };
        const read = (bodies?: BufferPool) =>
          clientFor(server)
            .client.getDeferredJson(reportPath('w'), { query, ...(bodies ? { bodies } : {}) })
            .catch((e: Error) => e);
        const plain = await read();
        const from = taken.length;
        const pooled = await read(pool);
        if (plain instanceof Error || pooled instanceof Error) {
          expect(String(pooled), name).toBe(String(plain));
        } else {
          expect(pooled.text, name).toBe(plain.text);
          expect(pooled.utf8.equals(plain.utf8), name).toBe(true);
        }
        const under = pooled instanceof Error ? undefined : pooled.utf8.buffer;
        // One buffer a body, none for one not declared, more for one that outgrew its own.
        if (name === 'gzip') expect(taken.length - from, name).toBeGreaterThan(1);
        else expect(taken.length - from, name).toBe(name === 'chunked' ? 0 : 1);
        // Each buffer taken is the answer's bytes, or back in the pool.
        for (const buffer of taken.slice(from))
          expect(buffer === under || given.includes(buffer), name).toBe(true);
        if (under !== undefined && taken.includes(under as ArrayBuffer)) {
          kept++;
          pool.give(pooled instanceof Error ? undefined : pooled.utf8);
        }
      }
    } finally {
      await server.close();
    }
    // Kept: the eight bodies that are UTF-8, declared so or by default (gzip's once decoded, JSON or not); given
    // back: the other six, the answer refused among them.
    expect(kept).toBe(8);
  });
});
