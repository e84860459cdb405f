import { connect, createServer, type Socket } from 'node:net';

/** The code of the protocol's SSLRequest: a message of 8 bytes, this code after its length. */
const SSL_REQUEST = 80877103;

/** A proxy on a free loopback port to a PostgreSQL server that can end a session as the server ends one. */
export interface CuttingProxy {
  /** `url` with its host and port changed to the proxy's. */
  urlThrough(url: string): string;
  /**
   * The next message a client sends (on any of its sessions) is not passed on: the client gets what PostgreSQL
   * sends a session that pg_terminate_backend ended (FATAL 57P01), and the session is closed. Resolves once done.
   */
  cutNext(): Promise<void>;
  close(): void;
}

/** PostgreSQL's ErrorResponse for a terminated backend, as a server sends it before it closes the session. */
function terminatedMessage(): Buffer {
  const fields = Buffer.concat([
    ...[
      ['S', 'FATAL'],
      ['V', 'FATAL'],
      ['C', '57P01'],
      ['M', 'terminating connection due to administrator command'],
    ].map(([code, value]) => Buffer.from(`${code}${value}\0`)),
    Buffer.from([0]),
  ]);
  const head = Buffer.alloc(5);
  head.write('E', 0);
  head.writeInt32BE(fields.length + 4, 1);
  return Buffer.concat([head, fields]);
}

/**
 * Starts a TCP proxy in front of the PostgreSQL server at `target` (host:port). It answers every SSLRequest with
 * 'N' and passes everything else through, until told to cut: then a session ends at a chosen moment, the way a
 * killed backend, a failover or an idle cut ends it, with a query in flight.
 */
export async function startCuttingProxy(target: { host: string; port: number }): Promise<CuttingProxy> {
  const sockets: Socket[] = [];
  let armed: (() => void) | undefined;
  const server = createServer((client) => {
    sockets.push(client);
    client.on('error', () => {});
    let head = Buffer.alloc(0);
    const onHead = (chunk: Buffer): void => {
      head = Buffer.concat([head, chunk]);
      if (head.length < 8) return;
      if (head.readInt32BE(0) === 8 && head.readInt32BE(4) === SSL_REQUEST) {
        client.write('N');
        head = head.subarray(8);
        if (head.length < 8) return;
      }
      client.off('data', onHead);
      const upstream = connect(target.port, target.host);
      sockets.push(upstream);
      upstream.on('error', () => client.destroy());
      client.on('close', () => upstream.destroy());
      let cutting = false;
      upstream.on('close', () => {
        if (!cutting) client.destroy();
      });
      upstream.write(head);
      upstream.pipe(client);
      client.on('data', (data: Buffer) => {
        const cut = armed;
        if (cut === undefined) {
          upstream.write(data);
          return;
        }
        armed = undefined;
        cutting = true;
        upstream.unpipe(client);
        upstream.destroy();
        client.end(terminatedMessage(), cut);
      });
    };
    client.on('data', onHead);
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
    cutNext() {
      return new Promise<void>((resolve) => {
        armed = resolve;
      });
    },
    close() {
      for (const socket of sockets) socket.destroy();
      server.close();
    },
  };
}
