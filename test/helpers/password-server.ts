import { createServer, type Socket } from 'node:net';

/** What a client sent to log in: the user of its startup message and the password it answered with. */
export interface Login {
  readonly user: string;
  readonly password: string;
}

/**
 * A TCP server on a free loopback port that speaks just enough of the PostgreSQL protocol to ask for a
 * cleartext password, records it, and refuses the login (28P01): it shows which password a client sends,
 * where the test server trusts every connection.
 */
export interface PasswordServer {
  readonly port: number;
  readonly logins: readonly Login[];
  close(): void;
}

/** With `scram`, it asks for SCRAM-SHA-256, as a server of today does, and answers the client's first message. */
export async function startPasswordServer(
  options: { readonly scram?: boolean } = {},
): Promise<PasswordServer> {
  const sockets: Socket[] = [];
  const logins: Login[] = [];
  const server = createServer((socket) => {
    sockets.push(socket);
    let buffer = Buffer.alloc(0);
    let user = '';
    socket.on('error', () => {});
    socket.on('data', (chunk: Buffer) => {
      buffer = Buffer.concat([buffer, chunk]);
      for (;;) {
        const startup = user === '';
        const headerBytes = startup ? 4 : 5;
        if (buffer.length < headerBytes) return;
        const length = buffer.readInt32BE(startup ? 0 : 1);
        const total = startup ? length : length + 1;
        if (buffer.length < total) return;
        const type = startup ? '' : String.fromCharCode(buffer[0] ?? 0);
        const body = buffer.subarray(headerBytes, total);
        buffer = buffer.subarray(total);
        // A client closing the connection says so (Terminate, 'X'): no password in it.
        if (type === 'X') continue;
        if (startup) {
          // Protocol version, then NUL-terminated name/value pairs.
          const pairs = body.subarray(4).toString('utf8').split('\0');
          user = pairs[pairs.indexOf('user') + 1] ?? '?';
          socket.write(
            options.scram === true
              ? authentication(10, Buffer.from('SCRAM-SHA-256\0\0', 'utf8')) // AuthenticationSASL
              : Buffer.from([0x52, 0, 0, 0, 8, 0, 0, 0, 3]), // AuthenticationCleartextPassword
          );
        } else if (options.scram === true) {
          // The SASLInitialResponse: a server-first message follows, which the client answers with the password.
          logins.push({ user, password: '' });
          socket.write(authentication(11, Buffer.from('r=clientnonceservernonce,s=c2FsdA==,i=4096', 'utf8')));
        } else {
          // The PasswordMessage ('p'): the password, NUL-terminated.
          logins.push({ user, password: body.toString('utf8').replace(/\0$/, '') });
          socket.end(errorResponse('28P01', `password authentication failed for user "${user}"`));
          return;
        }
      }
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  const port = typeof address === 'object' && address !== null ? address.port : 0;
  return {
    port,
    logins,
    close() {
      for (const socket of sockets) socket.destroy();
      server.close();
    },
  };
}

function errorResponse(code: string, message: string): Buffer {
  const fields = Buffer.from(`SFATAL\0VFATAL\0C${code}\0M${message}\0\0`, 'utf8');
  const header = Buffer.alloc(5);
  header.write('E', 0);
  header.writeInt32BE(fields.length + 4, 1);
  return Buffer.concat([header, fields]);
}

/** An Authentication message ('R') of this `code` and data. */
function authentication(code: number, data: Buffer): Buffer {
  const header = Buffer.alloc(9);
  header.write('R', 0);
  header.writeInt32BE(8 + data.length, 1);
  header.writeInt32BE(code, 5);
  return Buffer.concat([header, data]);
}
