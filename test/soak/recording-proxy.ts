import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { performance } from 'node:perf_hooks';
import type { ApiCall } from './live-requests.js';

/**
 * A recording proxy in front of the simulator, one port per process of a concurrent run, for what the simulator's
 * request log cannot tell: which process made a call, when it began and ended, and which window a creation call
 * was for. It forwards every request as it is (one upstream connection per request, so that a connection the
 * simulator cuts is cut for the client too) and records each call.
 */

const CREATE_PATH = '/v4/reports/posts';
const DIMENSIONS_PATH = '/v4/reports/posts/dimensions';
const REPORT_PATH = /^\/v4\/reports\/posts\/([^/]+)$/;
// Hop-by-hop headers: each side of the proxy has its own connection.
const HOP_BY_HOP = new Set(['connection', 'keep-alive', 'transfer-encoding', 'te', 'upgrade', 'host']);

interface OpenCall {
  client: number;
  method: string;
  path: string;
  window: string | null;
  reportId: string | null;
  startMs: number;
  endMs: number | null;
}

function withoutHopByHop(headers: http.IncomingHttpHeaders): http.OutgoingHttpHeaders {
  return Object.fromEntries(Object.entries(headers).filter(([name]) => !HOP_BY_HOP.has(name.toLowerCase())));
}

function creationWindow(body: Buffer): string | null {
  try {
    const params = JSON.parse(body.toString('utf8')) as { start_date?: unknown; end_date?: unknown };
    return `${String(params.start_date)}..${String(params.end_date)}`;
  } catch {
    return null;
  }
}

function answeredId(text: string): string | null {
  try {
    const id = (JSON.parse(text) as { id?: unknown }).id;
    return typeof id === 'string' ? id : null;
  } catch {
    return null;
  }
}

export class RecordingProxy {
  readonly #target: URL;
  readonly #servers: http.Server[] = [];
  /** Every report id a creation call was answered with in this proxy's life, and its window. */
  readonly #windows = new Map<string, string>();
  #calls: OpenCall[] = [];
  /** Reads of a report no creation call seen here was answered with. */
  #unknownReports = 0;
  #creationsAnswered = 0;

  private constructor(target: string) {
    this.#target = new URL(target);
  }

  /** Listens on `clients` ports, forwarding to the simulator at `baseUrl` ('http://127.0.0.1:PORT/v4'). */
  static async start(baseUrl: string, clients: number): Promise<RecordingProxy> {
    const proxy = new RecordingProxy(baseUrl);
    for (let client = 0; client < clients; client += 1) {
      const server = http.createServer((request, response) => proxy.#forward(client, request, response));
      await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
      proxy.#servers.push(server);
    }
    return proxy;
  }

  /** The base URL process `client` is given. */
  baseUrl(client: number): string {
    const server = this.#servers[client];
    if (server === undefined)
      throw new RangeError(`the proxy has ${this.#servers.length} ports, not ${client + 1}`);
    return `http://127.0.0.1:${(server.address() as AddressInfo).port}${this.#target.pathname}`;
  }

  /** The calls since the last take (a call still open counts as ending when it began), and forgets them. */
  take(): { calls: ApiCall[]; unknownReports: number } {
    const calls = this.#calls.map((call) => ({ ...call, endMs: call.endMs ?? call.startMs }));
    const unknownReports = this.#unknownReports;
    this.#calls = [];
    this.#unknownReports = 0;
    return { calls, unknownReports };
  }

  /** Creation calls answered 200 and handed back whole, in this proxy's life: the simulator's creationCalls. */
  get creationsAnswered(): number {
    return this.#creationsAnswered;
  }

  async close(): Promise<void> {
    await Promise.all(
      this.#servers.map(
        (server) =>
          new Promise<void>((resolve) => {
            server.close(() => resolve());
            server.closeAllConnections();
          }),
      ),
    );
  }

  #forward(client: number, request: http.IncomingMessage, response: http.ServerResponse): void {
    const path = (request.url ?? '/').split('?')[0] ?? '/';
    const reportId = path === DIMENSIONS_PATH ? null : (REPORT_PATH.exec(path)?.[1] ?? null);
    const window = reportId === null ? null : (this.#windows.get(reportId) ?? null);
    if (reportId !== null && window === null) this.#unknownReports += 1;
    const call: OpenCall = {
      client,
      method: request.method ?? 'GET',
      path,
      window,
      reportId,
      startMs: performance.now(),
      endMs: null,
    };
    this.#calls.push(call);
    const chunks: Buffer[] = [];
    let upstream: http.ClientRequest | undefined;
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      const body = Buffer.concat(chunks);
      const creation = call.method === 'POST' && path === CREATE_PATH;
      if (creation) call.window = creationWindow(body);
      upstream = this.#send(call, creation, request, body, response);
    });
    response.on('close', () => {
      // The client went away (or was killed) before its answer: the simulator sees it go away too.
      if (!response.writableFinished) upstream?.destroy();
    });
  }

  #send(
    call: OpenCall,
    creation: boolean,
    request: http.IncomingMessage,
    body: Buffer,
    response: http.ServerResponse,
  ): http.ClientRequest {
    const headers = withoutHopByHop(request.headers);
    if (body.length > 0) headers['content-length'] = body.length;
    const upstream = http.request({
      host: this.#target.hostname,
      port: this.#target.port,
      method: call.method,
      path: request.url,
      headers,
      agent: false,
    });
    upstream.on('response', (answer) => {
      response.writeHead(answer.statusCode ?? 502, withoutHopByHop(answer.headers));
      let text = '';
      answer.on('data', (chunk: Buffer) => {
        if (creation) text += chunk.toString('utf8');
        response.write(chunk);
      });
      answer.on('end', () => {
        if (creation && answer.statusCode === 200) {
          this.#creationsAnswered += 1;
          call.reportId = answeredId(text);
          if (call.reportId !== null && call.window !== null) this.#windows.set(call.reportId, call.window);
        }
        call.endMs = performance.now();
        response.end();
      });
      answer.on('error', () => request.socket.destroy());
    });
    // The simulator cut the connection (a dropped connection, or a body cut short): so does the proxy.
    upstream.on('error', () => request.socket.destroy());
    upstream.end(body);
    return upstream;
  }
}
