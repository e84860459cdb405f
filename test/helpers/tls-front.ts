import { connect, type Socket } from 'node:net';
import { createServer, type TLSSocket } from 'node:tls';

/** HTTPS in front of a plain-HTTP server (the simulator): what a client sees of an API behind TLS. */
export interface TlsFront {
  readonly port: number;
  /** `baseUrl` of the server behind, as https:// on this front, with `host` as its host name. */
  urlFor(baseUrl: string, host?: string): string;
  /** TCP connections accepted (a TLS handshake begun), whether the handshake succeeded or not. */
  connections(): number;
  /** Handshakes that succeeded. */
  handshakes(): number;
  close(): Promise<void>;
}

export interface TlsFrontOptions {
  readonly cert: string;
  readonly key: string;
  /** Asks every client for a certificate signed by this CA (PEM) and refuses one without. */
  readonly requireClientCa?: string;
}

/** Starts a TLS front on a free loopback port that passes every decrypted connection on to `target`'s port. */
export async function startTlsFront(targetPort: number, options: TlsFrontOptions): Promise<TlsFront> {
  let connections = 0;
  let handshakes = 0;
  const sockets = new Set<Socket>();
  const server = createServer(
    {
      cert: options.cert,
      key: options.key,
      ...(options.requireClientCa === undefined
        ? {}
        : { ca: options.requireClientCa, requestCert: true, rejectUnauthorized: true }),
    },
    (secure: TLSSocket) => {
      handshakes += 1;
      const plain = connect(targetPort, '127.0.0.1');
      sockets.add(plain);
      secure.pipe(plain).pipe(secure);
      const end = () => {
        secure.destroy();
        plain.destroy();
        sockets.delete(plain);
      };
      secure.on('error', end).on('close', end);
      plain.on('error', end).on('close', end);
    },
  );
  server.on('connection', (socket: Socket) => {
    connections += 1;
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });
  server.on('tlsClientError', () => {});
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  const port = typeof address === 'object' && address !== null ? address.port : 0;
  return {
    port,
    urlFor(baseUrl, host = 'localhost') {
      const url = new URL(baseUrl);
      return `https://${host}:${port}${url.pathname}`;
    },
    connections: () => connections,
    handshakes: () => handshakes,
    close: () =>
      new Promise<void>((resolve) => {
        for (const socket of sockets) socket.destroy();
        server.close(() => resolve());
      }),
  };
}
