import { randomBytes } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli } from '../helpers/cli.js';
import { createTestDatabase } from '../helpers/database.js';

/*
 * A hostile API that quotes the request's Authorization header back in its error: the message reaches the error
 * line of a command outside a run (dimensions, status, migrate, …), which must print it scrubbed as the log does.
 */

const db = await createTestDatabase();
const TOKEN = `tok-Hv8${randomBytes(12).toString('hex')}-secret`;
let server: Server;
let baseUrl: string;

beforeAll(async () => {
  server = createServer((request, response) => {
    const body = JSON.stringify({
      error: { message: `not allowed: ${request.headers.authorization ?? ''}` },
    });
    response.writeHead(400, { 'content-type': 'application/json' }).end(body);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}/v4`;
});
afterAll(async () => {
  await new Promise<void>((resolve) => server.close(() => resolve()));
});

describe('an error that quotes a secret, outside a run (the built CLI)', () => {
  it('dimensions prints the API refusal with the token scrubbed, on stderr and in its summary line', async () => {
    const result = await runCli(['dimensions', '--json'], {
      POST_REPORTS_BASE_URL: baseUrl,
      POST_REPORTS_TOKEN: TOKEN,
      DATABASE_URL: db.url,
      LOG_FORMAT: 'json',
    });
    expect(result.code).not.toBe(0);
    // The refusal is printed (it names what the API said), the token in it is not.
    expect(result.stderr).toContain('not allowed: Bearer');
    expect(`${result.stdout}${result.stderr}`).not.toContain(TOKEN);
  });
});
