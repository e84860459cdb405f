import { createServer, type Socket } from 'node:net';

/** A TCP server on a free loopback port that accepts connections and never answers: a hung database. */
export interface SilentServer {
  readonly port: number;
  close(): void;
}

export async function startSilentServer(): Promise<SilentServer> {
  const sockets: Socket[] = [];
  const server = createServer((socket) => sockets.push(socket));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  const port = typeof address === 'object' && address !== null ? address.port : 0;
  return {
    port,
    close() {
      for (const socket of sockets) socket.destroy();
      server.close();
    },
  };
}
