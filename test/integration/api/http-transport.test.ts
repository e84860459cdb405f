import { once } from 'node:events';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { brotliCompressSync, deflateSync, gzipSync } from 'node:zlib';
import { afterAll, beforeEach, describe, expect, it } from 'vitest';
import { type HttpAnswer, HttpTransport } from '../../../src/api/http-transport.js';

interface Seen {
  readonly method: string;
  readonly path: string;
  readonly headers: IncomingMessage['headers'];
  readonly body: string;
}

const seen: Seen[] = [];
const connections = new Set<Socket>();
let opened = 0;
let closed = 0;
let onRequest: (request: IncomingMessage, response: ServerResponse) => void = () => {};

const server = createServer((request, response) => {
  let body = '';
  request.setEncoding('utf8').on('data', (chunk: string) => {
    body += chunk;
  });
  request.on('end', () => {
    seen.push({ method: request.method ?? '', path: request.url ?? '', headers: request.headers, body });
    onRequest(request, response);
  });
});
server.on('connection', (socket: Socket) => {
  opened += 1;
  connections.add(socket);
  socket.on('close', () => {
    closed += 1;
    connections.delete(socket);
  });
});
server.listen(0, '127.0.0.1');
await once(server, 'listening');
const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
afterAll(async () => {
  for (const socket of connections) socket.destroy();
  server.close();
  await once(server, 'close');
});

beforeEach(() => {
  seen.length = 0;
  onRequest = () => {};
});

function get(
  transport: HttpTransport,
  path: string,
  signal = new AbortController().signal,
): Promise<HttpAnswer> {
  return transport.send({
    method: 'GET',
    url: new URL(path, base),
    headers: { accept: 'application/json' },
    signal,
  });
}

async function text(answer: HttpAnswer): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of answer.body) chunks.push(chunk);
  return Buffer.concat(chunks).toString('utf8');
}

describe('HttpTransport against a real HTTP server', () => {
  it('asks for gzip and deflate over plain HTTP and decodes each, as well as br and a body sent as is', async () => {
    const json = `{"data":"${'é'.repeat(20_000)}","n":12345678901234567890}`;
    const encoded: Record<string, Buffer> = {
      gzip: gzipSync(json),
      deflate: deflateSync(json),
      br: brotliCompressSync(json),
      identity: Buffer.from(json),
    };
    onRequest = (request, response) => {
      const coding = (request.url ?? '').slice(1);
      const body = encoded[coding]!;
      response.writeHead(200, {
        'content-type': 'application/json',
        'content-length': body.length,
        ...(coding === 'identity' ? {} : { 'content-encoding': coding }),
      });
      response.end(body);
    };
    const transport = new HttpTransport();
    for (const coding of Object.keys(encoded)) {
      const answer = await get(transport, `/${coding}`);
      expect(answer.status, coding).toBe(200);
      expect(answer.header('content-type'), coding).toBe('application/json');
      expect(await text(answer), coding).toBe(json);
    }
    expect(seen.map((s) => s.headers['accept-encoding'])).toEqual(Array(4).fill('gzip, deflate'));
  });

  it('keeps one connection for requests one after another, and a POST declares its length (not chunked)', async () => {
    onRequest = (_request, response) => response.end('{}');
    const transport = new HttpTransport();
    const before = opened;
    await text(await get(transport, '/a'));
    const posted = await transport.send({
      method: 'POST',
      url: new URL('/reports', base),
      headers: { 'content-type': 'application/json' },
      body: '{"name":"é"}',
      signal: new AbortController().signal,
    });
    await text(posted);
    await text(await get(transport, '/b'));
    expect(opened - before).toBe(1);
    const post = seen.find((s) => s.method === 'POST')!;
    expect(post).toMatchObject({ path: '/reports', body: '{"name":"é"}' });
    expect(post.headers['content-length']).toBe(String(Buffer.byteLength('{"name":"é"}')));
    expect(post.headers['transfer-encoding']).toBeUndefined();
  });

  it('answers a redirect with its status and location, and does not follow it', async () => {
    onRequest = (request, response) => {
      if (request.url === '/moved') response.writeHead(302, { location: `${base}/elsewhere` }).end();
      else response.end('{}');
    };
    const answer = await get(new HttpTransport(), '/moved');
    expect(answer.status).toBe(302);
    expect(answer.header('location')).toBe(`${base}/elsewhere`);
    await text(answer);
    expect(seen.map((s) => s.path)).toEqual(['/moved']);
  });

  it('ends a body cut short by an abort with an error, and closes the connection of a body cancelled', async () => {
    onRequest = (_request, response) => {
      response.writeHead(200, { 'content-type': 'application/json', 'content-length': 1000 });
      response.write('{"data":[');
    };
    const transport = new HttpTransport();
    const controller = new AbortController();
    const aborted = await get(transport, '/slow', controller.signal);
    const reading = text(aborted);
    controller.abort(new Error('deadline'));
    // The request ended by its signal: the body's reading ends as a reset connection's (the client, which knows
    // its signal aborted, names the abort: test/integration/api/https.test.ts).
    await expect(reading).rejects.toMatchObject({ code: 'ECONNRESET', message: 'aborted' });

    const closedBefore = closed;
    const cancelled = await get(transport, '/slow');
    cancelled.cancel();
    await expect.poll(() => closed).toBeGreaterThan(closedBefore);
  });
});
