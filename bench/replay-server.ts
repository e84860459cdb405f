/*
 * A caching proxy in front of an in-process simulator, run as a child process by the load benchmark. The first
 * request for a (method, URL, body) is answered by the simulator and remembered; every later identical request
 * is answered from memory. After a warm-up run the connector and the floor then read the very same page bodies
 * at the cost of writing a buffer, so the simulator's own CPU (generating records) is charged to neither.
 * Prints {"baseUrl": …} on stdout when ready; ends on SIGTERM.
 */
import { createServer, type IncomingMessage } from 'node:http';
import { parseArgs } from 'node:util';
import { KIND_SHAPES, startSimulator } from '../src/simulator/server.js';

interface Answer {
  readonly status: number;
  readonly contentType: string;
  readonly body: Buffer;
}

async function readAll(request: IncomingMessage): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of request) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}

async function main(): Promise<void> {
  const { values } = parseArgs({ options: { 'posts-per-day': { type: 'string', default: '1000' } } });
  // The kindest service: answers are cached and replayed, and the figures are of the connector, not of 429s or
  // ragged pages.
  const simulator = await startSimulator({
    postsPerDay: Number(values['posts-per-day']),
    shapes: KIND_SHAPES,
  });
  const upstream = new URL(simulator.baseUrl);
  const cache = new Map<string, Answer>();
  const server = createServer((request, response) => {
    void (async () => {
      const body = await readAll(request);
      const key = `${request.method} ${request.url} ${body.toString('utf8')}`;
      let answer = cache.get(key);
      if (answer === undefined) {
        const headers: Record<string, string> = { 'content-type': 'application/json' };
        const authorization = request.headers.authorization;
        if (authorization !== undefined) headers.authorization = authorization;
        const upstreamResponse = await fetch(new URL(request.url ?? '/', upstream.origin), {
          method: request.method ?? 'GET',
          headers,
          ...(body.length > 0 ? { body } : {}),
        });
        answer = {
          status: upstreamResponse.status,
          contentType: upstreamResponse.headers.get('content-type') ?? 'application/json',
          body: Buffer.from(await upstreamResponse.arrayBuffer()),
        };
        // A report not DONE yet must be asked again, never replayed.
        const pending = answer.body.length < 10_000 && answer.body.includes('IN_PROGRESS');
        if (answer.status === 200 && !(request.method === 'GET' && pending)) cache.set(key, answer);
      }
      response.writeHead(answer.status, {
        'content-type': answer.contentType,
        'content-length': answer.body.length,
      });
      response.end(answer.body);
    })().catch((error: unknown) => {
      response.writeHead(502, { 'content-type': 'text/plain' });
      response.end(String(error));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  if (address === null || typeof address === 'string') throw new Error('no TCP address');
  process.stdout.write(`${JSON.stringify({ baseUrl: `http://127.0.0.1:${address.port}/v4` })}\n`);
  const stop = (): void => {
    server.closeAllConnections();
    server.close();
    void simulator.close();
  };
  process.once('SIGTERM', stop);
  process.once('SIGINT', stop);
}

await main();
