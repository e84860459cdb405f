/*
 * Serves a wide load workload (wide-records.ts) as the Post Reporting API v4 does: the dimensions, a report
 * created DONE whatever the window asked for, and its pages by their next_page tokens. Every page is made
 * before the server says it is ready and then only written out, as the replay proxy does for the narrow
 * workload, so that neither the connector nor the floor is charged for making records.
 * Prints {"baseUrl", "reportId", "pages", "bytes", "pagesWithEscapedKeys"} on stdout when ready; ends on SIGTERM.
 */
import { createServer, type ServerResponse } from 'node:http';
import { parseArgs } from 'node:util';
import {
  hasEscapedKey,
  pageCount,
  pageToken,
  reportId,
  SEGMENT_DIMENSIONS,
  WIDE_STYLES,
  type WideStyle,
  widePage,
} from './wide-records.js';

const TOKEN = 'sim-token';
const PREFIX = '/v4/reports/posts';
const JSON_TYPE = 'application/json; charset=utf-8';

function send(response: ServerResponse, status: number, body: Buffer | string): void {
  const bytes = typeof body === 'string' ? Buffer.from(body) : body;
  response.writeHead(status, { 'content-type': JSON_TYPE, 'content-length': bytes.length });
  response.end(bytes);
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      posts: { type: 'string', default: '1000' },
      seed: { type: 'string', default: '1' },
      style: { type: 'string', default: 'hostile' },
    },
  });
  const style = values.style as WideStyle;
  if (!WIDE_STYLES.includes(style)) throw new Error(`--style ${WIDE_STYLES.join('|')}, not ${values.style}`);
  const workload = { seed: Number(values.seed), posts: Number(values.posts), style };
  const id = reportId(workload.seed);
  const pages: Buffer[] = [];
  const byToken = new Map<string, Buffer>();
  let bytes = 0;
  let pagesWithEscapedKeys = 0;
  for (let page = 0; page < pageCount(workload); page += 1) {
    const text = widePage(workload, page);
    if (hasEscapedKey(text)) pagesWithEscapedKeys += 1;
    const body = Buffer.from(text, 'utf8');
    bytes += body.length;
    pages.push(body);
    if (page > 0) byToken.set(pageToken(workload.seed, page), body);
  }
  const dimensions = JSON.stringify({
    brands: [
      'Café Ñandú',
      '東京ストア',
      'Müller Frische',
      'Lumen & Co',
      'Atlas Athletics',
      'Bergström Outdoor',
    ],
    markets: ['US', 'JP', 'IT', 'BR', 'CA', 'DE'],
    channels: ['Instagram', 'Pinterest', 'Facebook', 'LinkedIn', 'YouTube'],
    custom_segments: SEGMENT_DIMENSIONS,
  });
  const server = createServer((request, response) => {
    // The body of a creation call is not needed: every window gets the one report.
    request.resume();
    request.on('end', () => {
      if (request.headers.authorization !== `Bearer ${TOKEN}`) {
        send(response, 401, '{"message":"invalid token"}');
        return;
      }
      const url = new URL(request.url ?? '/', 'http://localhost');
      if (request.method === 'GET' && url.pathname === `${PREFIX}/dimensions`) {
        send(response, 200, dimensions);
      } else if (request.method === 'POST' && url.pathname === PREFIX) {
        send(response, 200, JSON.stringify({ id, status: 'DONE' }));
      } else if (request.method === 'GET' && url.pathname === `${PREFIX}/${encodeURIComponent(id)}`) {
        const token = url.searchParams.get('page');
        const body = token === null ? pages[0] : byToken.get(token);
        if (body === undefined) send(response, 400, '{"message":"invalid page"}');
        else send(response, 200, body);
      } else {
        send(response, 404, '{"message":"not found"}');
      }
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  if (address === null || typeof address === 'string') throw new Error('no TCP address');
  process.stdout.write(
    `${JSON.stringify({ baseUrl: `http://127.0.0.1:${address.port}/v4`, reportId: id, pages: pages.length, bytes, pagesWithEscapedKeys })}\n`,
  );
  const stop = (): void => {
    server.closeAllConnections();
    server.close();
  };
  process.once('SIGTERM', stop);
  process.once('SIGINT', stop);
}

await main();
