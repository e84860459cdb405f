/*
 * HTTPS, as every real base URL is: the simulator served over TLS with a CA the tests make, read whole by the
 * connector's client; and the transport's TLS branch (its agent, br asked for and decoded) with compressed bodies
 * whole, cut short, aborted and cancelled.
 */
import { once } from 'node:events';
import { createServer, type Server } from 'node:https';
import type { AddressInfo, Socket } from 'node:net';
import { brotliCompressSync, deflateSync, gzipSync } from 'node:zlib';
import { afterAll, beforeEach, describe, expect, it } from 'vitest';
import { type HttpAnswer, HttpTransport } from '../../../src/api/http-transport.js';
import { ApiError } from '../../../src/errors.js';
import { fetchDimensions } from '../../../src/extract/dimensions.js';
import { readPages } from '../../../src/extract/pager.js';
import { createReport, waitForReport } from '../../../src/extract/report.js';
import { postIds } from '../../../src/model/page-tape.js';
import { type RunningSimulator, startSimulator } from '../../../src/simulator/server.js';
import { makeTestCa, trustTestCa } from '../../helpers/test-ca.js';
import { clientFor, failure } from '../extract/harness.js';

const ca = trustTestCa();
const sim: RunningSimulator = await startSimulator({
  seed: 17,
  postsPerDay: 60,
  pageSize: 100,
  tls: { key: ca.serverKey, cert: ca.serverCert },
});

// A server of hand-made answers over TLS, for bodies the simulator does not send (compressed, cut short).
let onRequest: (path: string, response: import('node:http').ServerResponse) => void = () => {};
const acceptEncodings: (string | undefined)[] = [];
const connections = new Set<Socket>();
let closedConnections = 0;
const server: Server = createServer({ key: ca.serverKey, cert: ca.serverCert }, (request, response) => {
  acceptEncodings.push(request.headers['accept-encoding']);
  request.resume();
  request.on('end', () => onRequest(request.url ?? '/', response));
});
server.on('secureConnection', (socket: Socket) => {
  connections.add(socket);
  socket.on('close', () => {
    closedConnections += 1;
    connections.delete(socket);
  });
});
server.listen(0, '127.0.0.1');
await once(server, 'listening');
const base = `https://127.0.0.1:${(server.address() as AddressInfo).port}`;

afterAll(async () => {
  await sim.close();
  for (const socket of connections) socket.destroy();
  server.close();
  await once(server, 'close');
});

beforeEach(() => {
  acceptEncodings.length = 0;
  onRequest = () => {};
});

// Numbers that do not repeat: half of any compressed form of it still holds some of it.
const JSON_TEXT = `{"data":[${Array.from({ length: 20_000 }, (_, i) => (i * 7919) % 100_003).join(',')}],"é":12345678901234567890}`;
const ENCODED: Record<string, Buffer> = {
  br: brotliCompressSync(JSON_TEXT),
  gzip: gzipSync(JSON_TEXT),
  'x-gzip': gzipSync(JSON_TEXT),
  deflate: deflateSync(JSON_TEXT),
};

function get(
  transport: HttpTransport,
  path: string,
  signal = new AbortController().signal,
): Promise<HttpAnswer> {
  return transport.send({ method: 'GET', url: new URL(path, base), headers: {}, signal });
}

/** Reads a body whole; calls `first` once the first chunk has arrived. */
async function read(
  answer: HttpAnswer,
  first: () => void = () => {},
): Promise<{ text: string; bytes: number }> {
  const chunks: Buffer[] = [];
  for await (const chunk of answer.body) {
    if (chunks.length === 0) first();
    chunks.push(chunk);
  }
  const text = Buffer.concat(chunks).toString('utf8');
  return { text, bytes: Buffer.byteLength(text) };
}

/** A compressed body whose first part is sent, then nothing more (the connection stays open). */
function halfSent(coding: string, response: import('node:http').ServerResponse): void {
  const body = ENCODED[coding]!;
  response.writeHead(200, {
    'content-type': 'application/json',
    'content-encoding': coding,
    'content-length': body.length,
  });
  response.write(body.subarray(0, body.length >> 1));
}

describe('the simulator over HTTPS', () => {
  it('serves the connector’s client a whole report, page by page, with the ids the simulator holds', async () => {
    expect(sim.baseUrl).toMatch(/^https:\/\/127\.0\.0\.1:\d+\/v4$/);
    const { client, config } = clientFor(sim);
    await fetchDimensions(client);
    const window = { start: '2026-03-01', end: '2026-03-05' };
    const mapping = { postIdField: 'platform_post_id', window };
    const { id } = await createReport(client, window, {});
    const first = await waitForReport(client, id, config.poll, mapping);
    const ids: string[] = [];
    let pages = 0;
    for await (const page of readPages(client, id, { mapping, first })) {
      pages += 1;
      ids.push(...postIds(page.posts));
    }
    expect(pages).toBe(3);
    expect(ids).toEqual(sim.referenceIds({ start_date: window.start, end_date: window.end }));
    // Over TLS the client asks for br besides gzip and deflate.
    expect(sim.requests().every((r) => r.authorization === `Bearer ${sim.token}`)).toBe(true);
  });

  it('is refused by a client that does not trust the certificate’s issuer, naming why', async () => {
    const stranger = makeTestCa();
    const untrusted = await startSimulator({
      seed: 17,
      tls: { key: stranger.serverKey, cert: stranger.serverCert },
    });
    try {
      const url = new URL(`${untrusted.baseUrl}/reports/posts/dimensions`);
      const error = await failure(() =>
        new HttpTransport().send({ method: 'GET', url, headers: {}, signal: new AbortController().signal }),
      );
      expect(error).toMatchObject({ code: 'UNABLE_TO_VERIFY_LEAF_SIGNATURE' });
      const { client } = clientFor(untrusted, { POST_REPORTS_MAX_ATTEMPTS: '1' });
      const refused = await failure(() => fetchDimensions(client));
      expect(refused).toBeInstanceOf(ApiError);
      expect(refused.message).toMatch(/unable to verify the first certificate/);
      // Refused before any request was sent.
      expect(untrusted.stats().requests).toBe(0);
    } finally {
      await untrusted.close();
      stranger.remove();
    }
  });
});

describe('HttpTransport over TLS', () => {
  it('asks for br, gzip and deflate, and decodes each, x-gzip as gzip', async () => {
    onRequest = (path, response) => {
      const coding = path.slice(1);
      const body = ENCODED[coding]!;
      response.writeHead(200, {
        'content-type': 'application/json',
        'content-encoding': coding,
        'content-length': body.length,
      });
      response.end(body);
    };
    const transport = new HttpTransport();
    for (const coding of Object.keys(ENCODED)) {
      expect((await read(await get(transport, `/${coding}`))).text, coding).toBe(JSON_TEXT);
    }
    expect(acceptEncodings).toEqual(Array(4).fill('br, gzip, deflate'));
  });

  it('ends a compressed body cut short with the connection reset, after what it held', async () => {
    const transport = new HttpTransport();
    for (const coding of Object.keys(ENCODED)) {
      onRequest = (_path, response) => {
        halfSent(coding, response);
        setTimeout(() => response.socket?.destroy(), 50);
      };
      const answer = await get(transport, `/${coding}`);
      let got = 0;
      const error = await failure(async () => {
        for await (const chunk of answer.body) got += chunk.length;
      });
      expect(error, coding).toMatchObject({ code: 'ECONNRESET', message: 'aborted' });
      // What the first half held was given before the error: the length check, not the decoder, refuses it.
      expect(got, coding).toBeGreaterThan(0);
      expect(got, coding).toBeLessThan(Buffer.byteLength(JSON_TEXT));
    }
  });

  it('ends a compressed body on an abort, and the client names the abort’s reason', async () => {
    onRequest = (_path, response) => halfSent('br', response);
    const transport = new HttpTransport();
    const controller = new AbortController();
    const answer = await get(transport, '/br', controller.signal);
    const error = await failure(() => read(answer, () => controller.abort(new Error('deadline'))));
    expect(error).toMatchObject({ code: 'ECONNRESET', message: 'aborted' });

    // Through the client: an ApiError ABORTED with the reason, not a network failure to retry.
    const { client } = clientFor({ baseUrl: `${base}/v4`, token: 'tls-token' });
    const stop = new AbortController();
    const reading = client.getJson('/reports/posts/dimensions', { signal: stop.signal });
    await expect.poll(() => acceptEncodings.length).toBe(2);
    stop.abort(new Error('deadline'));
    const thrown = await failure(() => reading);
    expect(thrown).toBeInstanceOf(ApiError);
    expect(thrown).toMatchObject({ code: 'ABORTED' });
    expect(thrown.message).toContain('deadline');
  });

  it('closes the connection of a compressed body cancelled, and the reader sees the body end early', async () => {
    onRequest = (_path, response) => halfSent('gzip', response);
    const transport = new HttpTransport();
    const closedBefore = closedConnections;
    const answer = await get(transport, '/gzip');
    const error = await failure(() => read(answer, () => answer.cancel()));
    expect(error).toMatchObject({ code: 'ERR_STREAM_PREMATURE_CLOSE' });
    await expect.poll(() => closedConnections).toBeGreaterThan(closedBefore);
  });
});
