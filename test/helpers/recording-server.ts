import { createServer } from 'node:http';
import type { Socket } from 'node:net';

/** One request as the stand-in endpoint received it. */
export interface Push {
  readonly method: string;
  /** The request's path, as sent. */
  readonly path: string;
  readonly authorization: string | undefined;
  readonly contentType: string | undefined;
  readonly body: string;
}

/**
 * A stand-in for an endpoint a run reports to (a Prometheus Pushgateway, an OpenLineage endpoint): a real HTTP server
 * on a loopback port that records each request (any method, any path) and answers it as told (200 with an empty body
 * by default, as both answer what they take).
 */
export interface RecordingServer {
  /** `http://127.0.0.1:PORT`. */
  readonly url: string;
  readonly pushes: Push[];
  /** The next requests are answered `status` with `body`. */
  answerWith(status: number, body?: string): void;
  close(): Promise<void>;
}

export async function startRecordingServer(): Promise<RecordingServer> {
  const pushes: Push[] = [];
  let answer = { status: 200, body: '' };
  const sockets = new Set<Socket>();
  const server = createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      pushes.push({
        method: request.method ?? '',
        path: request.url ?? '',
        authorization: request.headers.authorization,
        contentType: request.headers['content-type'],
        body: Buffer.concat(chunks).toString('utf8'),
      });
      response.writeHead(answer.status, { 'content-type': 'text/plain; charset=utf-8' });
      response.end(answer.body);
    });
  });
  server.on('connection', (socket: Socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  if (address === null || typeof address === 'string') throw new Error('the server has no port');
  return {
    url: `http://127.0.0.1:${address.port}`,
    pushes,
    answerWith: (status, body = '') => {
      answer = { status, body };
    },
    close: async () => {
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
