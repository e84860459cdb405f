import { connect } from 'node:net';
import { afterAll, describe, expect, it } from 'vitest';
import { KIND_SHAPES, startSimulator } from '../../../src/simulator/server.js';
import { createReport, headers, readAllPages, reportUrl } from './sim-client.js';

const simulator = await startSimulator({ shapes: KIND_SHAPES, seed: 11, postsPerDay: 400 });
afterAll(() => simulator.close());

const { hostname, port } = new URL(simulator.baseUrl);

/** Writes raw bytes, optionally closes early, and returns whatever came back before the socket closed. */
function raw(
  payload: string | Buffer,
  options: { endWrite?: boolean; destroyAfterWrite?: boolean } = {},
): Promise<string> {
  return new Promise((resolve) => {
    const socket = connect(Number(port), hostname);
    const chunks: Buffer[] = [];
    // Only a guard against hanging: nothing is asserted about how long anything takes.
    socket.setTimeout(5_000, () => socket.destroy());
    socket.on('data', (chunk: Buffer) => chunks.push(chunk));
    socket.on('error', () => {});
    socket.on('close', () => resolve(Buffer.concat(chunks).toString('latin1')));
    socket.on('connect', () => {
      if (options.destroyAfterWrite === true) socket.write(payload, () => socket.destroy());
      else if (options.endWrite === false) socket.write(payload);
      else socket.end(payload);
    });
  });
}

function statusOf(response: string): number | null {
  const match = /^HTTP\/1\.1 (\d{3})/.exec(response);
  return match === null ? null : Number(match[1]);
}

const auth = `Authorization: Bearer ${simulator.token}\r\n`;

async function stillServes(): Promise<void> {
  const response = await fetch(`${simulator.baseUrl}/reports/posts/dimensions`, {
    headers: headers(simulator),
  });
  expect(response.status).toBe(200);
  expect(((await response.json()) as { brands: string[] }).brands.length).toBeGreaterThan(0);
}

describe('crash resistance', () => {
  it('answers malformed HTTP on raw sockets with 4xx, or closes, and keeps serving', async () => {
    // null: the HTTP parser's business; any 4xx or a closed connection will do, never a 5xx.
    const cases: [string, string | Buffer, number | null][] = [
      ['binary garbage', Buffer.from([0, 1, 2, 255, 254, 13, 10, 13, 10]), null],
      ['no HTTP version', 'GET /v4/reports/posts/dimensions\r\n\r\n', null],
      ['unknown HTTP version', 'GET /v4/reports/posts/dimensions HTTP/9.9\r\nHost: x\r\n\r\n', null],
      ['bad percent-encoding', `GET /v4/reports/posts/%ZZ%E0%A4 HTTP/1.1\r\nHost: x\r\n${auth}\r\n`, 404],
      [
        'bad encoding in a page token',
        `GET /v4/reports/posts/abc?page=%ZZ HTTP/1.1\r\nHost: x\r\n${auth}\r\n`,
        404,
      ],
      [
        'an absolute-form target',
        `GET http://evil.example/v4/reports/posts/dimensions HTTP/1.1\r\nHost: x\r\n${auth}\r\n`,
        200,
      ],
      ['an asterisk target', `OPTIONS * HTTP/1.1\r\nHost: x\r\n${auth}\r\n`, 404],
      [
        'a huge header',
        `GET /v4/reports/posts/dimensions HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(100_000)}\r\n\r\n`,
        431,
      ],
      ['a header without colon', 'GET /v4/reports/posts/dimensions HTTP/1.1\r\nHost x\r\n\r\n', null],
      [
        'a negative Content-Length',
        `POST /v4/reports/posts HTTP/1.1\r\nHost: x\r\nContent-Length: -5\r\n\r\n`,
        400,
      ],
      [
        'a non-numeric Content-Length',
        `POST /v4/reports/posts HTTP/1.1\r\nHost: x\r\nContent-Length: ab\r\n\r\n`,
        400,
      ],
      [
        'Content-Length with chunked encoding',
        'POST /v4/reports/posts HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n',
        null,
      ],
      [
        'broken chunked encoding',
        `POST /v4/reports/posts HTTP/1.1\r\nHost: x\r\n${auth}Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n{}\r\n`,
        null,
      ],
      [
        'a body shorter than its Content-Length',
        `POST /v4/reports/posts HTTP/1.1\r\nHost: x\r\n${auth}Content-Type: application/json\r\nContent-Length: 500\r\n\r\n{"start_`,
        null,
      ],
      [
        'a declared 1 GB body',
        `POST /v4/reports/posts HTTP/1.1\r\nHost: x\r\n${auth}Content-Type: application/json\r\nContent-Length: 1000000000\r\n\r\n{`,
        413,
      ],
      ['HEAD', `HEAD /v4/reports/posts/dimensions HTTP/1.1\r\nHost: x\r\n${auth}\r\n`, 405],
      ['TRACE', `TRACE /v4/reports/posts HTTP/1.1\r\nHost: x\r\n${auth}\r\n`, 405],
      ['half a request line', 'GET /v4/rep', null],
      ['nothing at all', '', null],
    ];
    for (const [name, payload, expected] of cases) {
      const response = await raw(payload);
      const status = statusOf(response);
      if (expected === null) expect(status === null || (status >= 400 && status < 500), name).toBe(true);
      else expect(status, name).toBe(expected);
      if (status !== null && status !== 405 && response.includes('\r\n\r\n') && !name.startsWith('HEAD')) {
        const body = response.slice(response.indexOf('\r\n\r\n') + 4);
        if (status >= 400) expect(() => JSON.parse(body), name).not.toThrow();
      }
    }
    await stillServes();
  });

  it('survives clients that vanish mid-body or mid-response', async () => {
    await raw(
      `POST /v4/reports/posts HTTP/1.1\r\nHost: x\r\n${auth}Content-Type: application/json\r\nContent-Length: 100000\r\n\r\n${'{"a":'.repeat(1000)}`,
      { destroyAfterWrite: true },
    );
    await raw(`GET /v4/reports/posts/dimensions HTTP/1.1\r\nHost: x\r\n${auth}`, { destroyAfterWrite: true });
    const report = await createReport(simulator, { start_date: '2026-01-01', end_date: '2026-01-10' });
    for (let i = 0; i < 5; i++) {
      const controller = new AbortController();
      const response = await fetch(reportUrl(simulator, report.id), {
        headers: headers(simulator),
        signal: controller.signal,
      });
      controller.abort();
      await response.text().catch(() => '');
    }
    // A keep-alive socket left open while the server keeps serving others.
    await raw(`GET /v4/reports/posts/dimensions HTTP/1.1\r\nHost: x\r\n${auth}\r\n`, {
      destroyAfterWrite: true,
    });
    expect(await readAllPages(simulator, report.id)).toHaveLength(4);
    await stillServes();
  });

  it('answers every malformed body with a 4xx JSON error', async () => {
    const bodies: (string | Uint8Array)[] = [
      '',
      ' ',
      'nul',
      '{"start_date":',
      '"2026-01-01"',
      '42',
      'true',
      `${'['.repeat(200_000)}${']'.repeat(200_000)}`,
      `{"start_date":"2026-01-01","end_date":"2026-01-02","brands":${'['.repeat(100_000)}${']'.repeat(100_000)}}`,
      `{"start_date":"2026-01-01","end_date":"2026-01-02","custom_segments":[${'{"name":'.repeat(50_000)}1${'}'.repeat(50_000)}]}`,
      new Uint8Array([0x7b, 0xff, 0xfe, 0x7d]),
      '{"start_date":"2026-01-01","end_date":"2026-01-02","custom_segments":[null]}',
      '{"start_date":"2026-01-01","end_date":"2026-01-02","custom_segments":[{"name":null,"values":[]}]}',
      '{"start_date":"2026-01-01","end_date":"2026-01-02","custom_segments":[{"name":"Region"}]}',
      '{"start_date":"2026-01-01","end_date":"2026-01-02","channels":[null]}',
      '{"start_date":"9999-12-31","end_date":"10000-01-01"}',
      '{"start_date":"0000-01-01","end_date":"0000-01-01"}',
      '{"start_date":"2026-01-01\\u0000","end_date":"2026-01-02"}',
      '{"__proto__":{"start_date":"2026-01-01"},"end_date":"2026-01-02"}',
      '{"start_date":{"toString":"x"},"end_date":"2026-01-02"}',
    ];
    for (const body of bodies) {
      const response = await fetch(`${simulator.baseUrl}/reports/posts`, {
        method: 'POST',
        headers: headers(simulator),
        body,
      });
      const label = typeof body === 'string' ? body.slice(0, 60) : 'bytes';
      expect(response.status, label).toBeGreaterThanOrEqual(400);
      expect(response.status, label).toBeLessThan(500);
      expect(await response.json(), label).toHaveProperty('error.message');
    }
    await stillServes();
  });

  it('serves many concurrent requests and never answers 500 on its own', async () => {
    const report = await createReport(simulator, { start_date: '2026-02-01', end_date: '2026-02-05' });
    const results = await Promise.all(
      Array.from({ length: 40 }, (_, i) =>
        i % 2 === 0
          ? readAllPages(simulator, report.id).then((pages) => pages.length)
          : fetch(`${simulator.baseUrl}/reports/posts/dimensions`, { headers: headers(simulator) }).then(
              async (r) => {
                await r.arrayBuffer();
                return r.status;
              },
            ),
      ),
    );
    expect(results).toEqual(Array.from({ length: 40 }, (_, i) => (i % 2 === 0 ? 2 : 200)));
    const statuses = Object.keys(simulator.stats().byStatus).map(Number);
    expect(statuses.filter((status) => status >= 500)).toEqual([]);
    expect(simulator.stats().requests).toBeGreaterThan(60);
  });
});
