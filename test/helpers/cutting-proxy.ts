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
  /**
   * Cuts the transactions whose messages carry `marker` (say, the commit lock's key), one per cut, in order (on any
   * session): 'statement': the message carrying it is not passed on, and the session ends as cutNext ends it
   * (nothing of the transaction is committed); 'answer': it passes, and so does the session's next COMMIT, but once
   * PostgreSQL answers the COMMIT (it committed), the connection drops before the answer is relayed, as a network
   * cut right after a commit. Resolves once every cut is done.
   */
  cutTransactions(marker: string, cuts: readonly Cut[]): Promise<void>;
  close(): void;
}

export type Cut = 'statement' | 'answer';

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

/** The simple-query message `COMMIT`, as pg sends it. */
function commitMessage(): Buffer {
  const text = Buffer.from('COMMIT\0');
  const head = Buffer.alloc(5);
  head.write('Q', 0);
  head.writeInt32BE(text.length + 4, 1);
  return Buffer.concat([head, text]);
}
const COMMIT = commitMessage();

/**
 * Starts a TCP proxy in front of the PostgreSQL server at `target` (host:port). It answers every SSLRequest with
 * 'N' and passes everything else through, until told to cut: then a session ends at a chosen moment, the way a
 * killed backend, a failover or an idle cut ends it, with a query in flight.
 */
export async function startCuttingProxy(target: { host: string; port: number }): Promise<CuttingProxy> {
  const sockets: Socket[] = [];
  let armed: (() => void) | undefined;
  let plan: { marker: Buffer; cuts: Cut[]; done: () => void } | undefined;
  // The cuts of a plan, each told once done: the plan is done with the last.
  const cutDone = (): void => {
    if (plan !== undefined && plan.cuts.length === 0) {
      plan.done();
      plan = undefined;
    }
  };
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
      // This session passed a marked message on: its next COMMIT's answer is not relayed.
      let dropAnswer = false;
      client.on('data', (data: Buffer) => {
        if (cutting) return;
        if (dropAnswer && data.includes(COMMIT)) {
          cutting = true;
          upstream.unpipe(client);
          upstream.once('data', () => {
            upstream.destroy();
            client.resetAndDestroy();
            cutDone();
          });
          // Unpiped, the socket is paused: the answer is read (and dropped) all the same.
          upstream.resume();
          upstream.write(data);
          return;
        }
        const marked = plan !== undefined && !dropAnswer && data.includes(plan.marker);
        const planned = marked ? plan?.cuts.shift() : undefined;
        if (planned === 'answer') {
          dropAnswer = true;
          upstream.write(data);
          return;
        }
        if (planned === 'statement') {
          cutting = true;
          upstream.unpipe(client);
          upstream.destroy();
          client.end(terminatedMessage(), cutDone);
          return;
        }
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
    cutTransactions(marker, cuts) {
      return new Promise<void>((resolve) => {
        plan = { marker: Buffer.from(marker), cuts: [...cuts], done: resolve };
      });
    },
    close() {
      for (const socket of sockets) socket.destroy();
      server.close();
    },
  };
}
