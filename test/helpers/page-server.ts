import { createServer, type ServerResponse } from 'node:http';
import type { Socket } from 'node:net';

/** A response of the page server: a body as bytes or text (UTF-8), or a handler writing it itself. */
export type HandMadeBody =
  | { readonly body: string | Uint8Array; readonly contentType?: string }
  | { readonly write: (response: ServerResponse) => void };

export interface PageServerOptions {
  /** The dimensions response (default: every list empty). */
  readonly dimensions?: unknown;
  /** The report of a window (its start date): its pages by token, '' for the first page (the status poll). */
  readonly pages: (start: string) => Readonly<Record<string, HandMadeBody>>;
  /** Page requests answered at most (default 1,000); later ones answer 404. */
  readonly maxPages?: number;
  /** The id a report's creation answers for a window (its start date): default the start date itself. */
  readonly reportId?: (start: string) => string;
}

export interface PageServer {
  readonly baseUrl: string;
  readonly token: string;
  /** GET requests for report pages served so far. */
  pagesServed(): number;
  /** POST requests creating a report so far. */
  reportsCreated(): number;
  close(): Promise<void>;
}

const JSON_TYPE = 'application/json; charset=utf-8';

/** A DONE page of hand-made records (each a JSON text, written as given) and its next token. */
export function donePage(id: string, records: readonly string[], next: string | null): string {
  return `{"id":${JSON.stringify(id)},"status":"DONE","data":[${records.join(',')}],"response_metadata":[{"next_page":${next === null ? 'null' : JSON.stringify(next)}}]}`;
}

/**
 * A small server of the API's three routes answering with hand-made bodies, for inputs the simulator cannot
 * produce (bytes that are not UTF-8, other charsets, repeated keys, endless bodies). A report's id is its
 * window's start date; every report is DONE at once.
 */
export async function startPageServer(options: PageServerOptions): Promise<PageServer> {
  const token = 'page-token';
  const sockets = new Set<Socket>();
  let served = 0;
  let created = 0;
  const server = createServer((request, response) => {
    const url = new URL(request.url ?? '/', 'http://localhost');
    let body = '';
    request.setEncoding('utf8').on('data', (chunk: string) => {
      body += chunk;
    });
    request.on('end', () => {
      const json = (status: number, value: unknown) => {
        response.writeHead(status, { 'content-type': JSON_TYPE }).end(JSON.stringify(value));
      };
      if (request.headers.authorization !== `Bearer ${token}`) return json(401, { message: 'unauthorized' });
      if (url.pathname === '/v4/reports/posts/dimensions') {
        return json(
          200,
          options.dimensions ?? { brands: [], markets: [], channels: [], custom_segments: [] },
        );
      }
      if (url.pathname === '/v4/reports/posts' && request.method === 'POST') {
        const params = JSON.parse(body) as { start_date: string };
        created += 1;
        return json(200, {
          id: options.reportId?.(params.start_date) ?? params.start_date,
          status: 'IN_PROGRESS',
        });
      }
      const match = /^\/v4\/reports\/posts\/([^/]+)$/.exec(url.pathname);
      if (match === null) return json(404, { message: 'not found' });
      const pages = options.pages(decodeURIComponent(match[1] ?? ''));
      const page = pages[url.searchParams.get('page') ?? ''];
      // A bound on what a test may be served, so that a connector following pages forever ends instead.
      if (page === undefined || served >= (options.maxPages ?? 1000))
        return json(404, { message: 'no such page' });
      served += 1;
      if ('write' in page) return page.write(response);
      response.writeHead(200, { 'content-type': page.contentType ?? JSON_TYPE }).end(page.body);
    });
  });
  server.on('connection', (socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  const port = typeof address === 'object' && address !== null ? address.port : 0;
  return {
    baseUrl: `http://127.0.0.1:${port}/v4`,
    token,
    pagesServed: () => served,
    reportsCreated: () => created,
    close: () =>
      new Promise<void>((resolve) => {
        for (const socket of sockets) socket.destroy();
        server.close(() => resolve());
      }),
  };
}
