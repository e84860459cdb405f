import { connect, createServer, type Socket } from 'node:net';

/** The code of the protocol's SSLRequest: a message of 8 bytes, this code after its length. */
const SSL_REQUEST = 80877103;

/** A proxy on a free loopback port to a PostgreSQL server, which answers that it has no SSL. */
export interface NoSslProxy {
  /** `url` with its host and port changed to the proxy's. */
  urlThrough(url: string): string;
  close(): void;
}

/**
 * Starts a TCP proxy in front of the PostgreSQL server at `target` (host:port) that answers every SSLRequest with
 * 'N' (no SSL here) and passes everything else through: a server without SSL, whatever the target's setting.
 */
export async function startNoSslProxy(target: { host: string; port: number }): Promise<NoSslProxy> {
  const sockets: Socket[] = [];
  const server = createServer((client) => {
    sockets.push(client);
    client.on('error', () => {});
    let head = Buffer.alloc(0);
    const onData = (chunk: Buffer): void => {
      head = Buffer.concat([head, chunk]);
      if (head.length < 8) return;
      if (head.readInt32BE(0) === 8 && head.readInt32BE(4) === SSL_REQUEST) {
        client.write('N');
        head = head.subarray(8);
        if (head.length < 8) return;
      }
      client.off('data', onData);
      const upstream = connect(target.port, target.host);
      sockets.push(upstream);
      upstream.on('error', () => client.destroy());
      client.on('close', () => upstream.destroy());
      upstream.on('close', () => client.destroy());
      upstream.write(head);
      client.pipe(upstream);
      upstream.pipe(client);
    };
    client.on('data', onData);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  const port = typeof address === 'object' && address !== null ? address.port : 0;
  return {
    urlThrough(url) {
      const through = new URL(url);
      through.hostname = '127.0.0.1';
      through.port = String(port);
      return through.toString();
    },
    close() {
      for (const socket of sockets) socket.destroy();
      server.close();
    },
  };
}
