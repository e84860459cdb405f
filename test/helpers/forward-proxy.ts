import { createServer, type IncomingMessage, request, type ServerResponse } from 'node:http';
import { connect, type Socket } from 'node:net';

/** A forward proxy as a company runs one: CONNECT tunnels and absolute-form requests, with Basic authentication. */
export interface ForwardProxy {
  /** `http://user:password@127.0.0.1:PORT` (or without credentials when the proxy asks for none). */
  readonly url: string;
  readonly port: number;
  /** Every CONNECT's target (`host:port`), in order, refused ones included. */
  readonly connects: string[];
  /** Every absolute-form request's target URL, in order, refused ones included. */
  readonly requests: string[];
  /** The next `count` CONNECTs that would be let through are answered `status` instead, or dropped unanswered. */
  refuseNext(count: number, status: number | 'drop'): void;
  close(): Promise<void>;
}

export interface ForwardProxyOptions {
  /** Basic credentials the proxy requires (407 without them). */
  readonly credentials?: { readonly user: string; readonly password: string };
  /** Host names only the proxy resolves (to 127.0.0.1), as a company's internal names. */
  readonly hosts?: readonly string[];
}

/** Starts a forward proxy on a free loopback port. A host it cannot resolve gets 502, as a proxy answers. */
export async function startForwardProxy(options: ForwardProxyOptions = {}): Promise<ForwardProxy> {
  const connects: string[] = [];
  const requests: string[] = [];
  const sockets = new Set<Socket>();
  let refusals: { count: number; status: number | 'drop' } = { count: 0, status: 503 };
  const expected =
    options.credentials === undefined
      ? undefined
      : `Basic ${Buffer.from(`${options.credentials.user}:${options.credentials.password}`).toString('base64')}`;
  const authorized = (message: IncomingMessage) =>
    expected === undefined || message.headers['proxy-authorization'] === expected;
  const internal = new Set(options.hosts ?? []);
  const resolve = (host: string): string => (internal.has(host) ? '127.0.0.1' : host);

  const server = createServer((incoming: IncomingMessage, outgoing: ServerResponse) => {
    requests.push(incoming.url ?? '');
    if (!authorized(incoming)) {
      outgoing.writeHead(407, { 'proxy-authenticate': 'Basic realm="proxy"', 'content-type': 'text/plain' });
      outgoing.end('proxy authentication required');
      return;
    }
    const target = new URL(incoming.url ?? '/');
    const headers = { ...incoming.headers };
    delete headers['proxy-authorization'];
    const forwarded = request(
      {
        host: resolve(target.hostname),
        port: target.port || 80,
        path: `${target.pathname}${target.search}`,
        method: incoming.method,
        headers,
      },
      (answer) => {
        outgoing.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(outgoing);
      },
    );
    forwarded.on('error', () => {
      if (!outgoing.headersSent) outgoing.writeHead(502);
      outgoing.end();
    });
    incoming.pipe(forwarded);
  });
  server.on('connect', (incoming: IncomingMessage, client: Socket, head: Buffer) => {
    const target = incoming.url ?? '';
    connects.push(target);
    sockets.add(client);
    client.on('close', () => sockets.delete(client));
    client.on('error', () => {});
    if (!authorized(incoming)) {
      client.end(
        'HTTP/1.1 407 Proxy Authentication Required\r\nProxy-Authenticate: Basic realm="proxy"\r\nContent-Length: 0\r\n\r\n',
      );
      return;
    }
    if (refusals.count > 0) {
      refusals = { ...refusals, count: refusals.count - 1 };
      if (refusals.status === 'drop') {
        client.destroy();
        return;
      }
      client.end(`HTTP/1.1 ${refusals.status} Refused\r\nContent-Length: 0\r\n\r\n`);
      return;
    }
    const colon = target.lastIndexOf(':');
    const host = target.slice(0, colon).replace(/^\[(.*)\]$/, '$1');
    const upstream = connect(Number(target.slice(colon + 1)), resolve(host));
    sockets.add(upstream);
    upstream.on('close', () => sockets.delete(upstream));
    upstream.once('connect', () => {
      client.write('HTTP/1.1 200 Connection Established\r\n\r\n');
      if (head.length > 0) upstream.write(head);
      upstream.pipe(client).pipe(upstream);
    });
    upstream.on('error', () => {
      if (client.writable) client.end('HTTP/1.1 502 Bad Gateway\r\nContent-Length: 0\r\n\r\n');
    });
  });
  server.on('connection', (socket: Socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });
  await new Promise<void>((done) => server.listen(0, '127.0.0.1', done));
  const address = server.address();
  const port = typeof address === 'object' && address !== null ? address.port : 0;
  const credentials =
    options.credentials === undefined
      ? ''
      : `${encodeURIComponent(options.credentials.user)}:${encodeURIComponent(options.credentials.password)}@`;
  return {
    url: `http://${credentials}127.0.0.1:${port}`,
    port,
    connects,
    requests,
    refuseNext(count, status) {
      refusals = { count, status };
    },
    close: () =>
      new Promise<void>((done) => {
        for (const socket of sockets) socket.destroy();
        server.close(() => done());
      }),
  };
}
