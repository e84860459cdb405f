import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { chown, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { delimiter, join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import pg from 'pg';
import { serverUser } from '../../src/demo/postgres-binaries.js';
import { freePort } from './free-port.js';

/** A PgBouncer of a test's own, in front of the test server. */
export interface Pooler {
  /** `serverUrl` with the pooler's host and port. */
  readonly url: string;
  stop(): Promise<void>;
}

/** Where pgbouncer is: on PATH, or where the Debian package puts it. Fails the test when it is missing. */
function pgbouncerBinary(): string {
  const dirs = [...(process.env.PATH ?? '').split(delimiter), '/usr/sbin', '/usr/local/sbin', '/usr/bin'];
  for (const dir of dirs) {
    if (dir !== '' && existsSync(join(dir, 'pgbouncer'))) return join(dir, 'pgbouncer');
  }
  throw new Error(
    'pgbouncer is not installed: the pooler tests run through a real PgBouncer (apt-get install pgbouncer)',
  );
}

/**
 * Starts PgBouncer on a free loopback port, in `mode` (session or transaction), forwarding every database to
 * the server of `serverUrl` with its user and password; clients are trusted.
 */
export async function startPgBouncer(serverUrl: string, mode: 'session' | 'transaction'): Promise<Pooler> {
  const binary = pgbouncerBinary();
  const server = new URL(serverUrl);
  const user = decodeURIComponent(server.username || 'postgres');
  const password = decodeURIComponent(server.password);
  const dir = await mkdtemp(join(tmpdir(), 'post-reports-etl-pgbouncer-'));
  const port = await freePort();
  const target = [
    `host=${server.hostname}`,
    `port=${server.port || '5432'}`,
    `user=${user}`,
    ...(password === '' ? [] : [`password=${password}`]),
  ].join(' ');
  await writeFile(join(dir, 'users.txt'), `"${user}" ""\n`, { mode: 0o600 });
  await writeFile(
    join(dir, 'pgbouncer.ini'),
    [
      '[databases]',
      `* = ${target}`,
      '[pgbouncer]',
      'listen_addr = 127.0.0.1',
      `listen_port = ${port}`,
      'auth_type = trust',
      `auth_file = ${join(dir, 'users.txt')}`,
      `pool_mode = ${mode}`,
      'unix_socket_dir =',
      'max_client_conn = 200',
      'default_pool_size = 20',
      '',
    ].join('\n'),
    { mode: 0o600 },
  );
  // PgBouncer will not run as root: it runs as the postgres user (else nobody) then.
  const ids = await serverUser();
  if (ids !== undefined) {
    await chown(dir, ids.uid, ids.gid);
    for (const file of ['users.txt', 'pgbouncer.ini']) await chown(join(dir, file), ids.uid, ids.gid);
  }
  let output = '';
  const child: ChildProcess = spawn(binary, [join(dir, 'pgbouncer.ini')], {
    stdio: ['ignore', 'pipe', 'pipe'],
    ...(ids === undefined ? {} : { uid: ids.uid, gid: ids.gid }),
  });
  child.stdout?.setEncoding('utf8').on('data', (chunk: string) => {
    output = (output + chunk).slice(-4000);
  });
  child.stderr?.setEncoding('utf8').on('data', (chunk: string) => {
    output = (output + chunk).slice(-4000);
  });
  const url = new URL(serverUrl);
  url.hostname = '127.0.0.1';
  url.port = String(port);
  for (let i = 0; ; i++) {
    if (child.exitCode !== null) throw new Error(`pgbouncer exited with ${child.exitCode}: ${output}`);
    const client = new pg.Client({ connectionString: url.toString() });
    client.on('error', () => {});
    try {
      await client.connect();
      await client.end();
      break;
    } catch (error) {
      await client.end().catch(() => {});
      if (i > 100) throw new Error(`pgbouncer did not accept connections: ${String(error)} ${output}`);
    }
    await sleep(100);
  }
  return {
    url: url.toString(),
    async stop() {
      if (child.exitCode === null) {
        const exited = new Promise((resolve) => child.once('exit', resolve));
        child.kill('SIGINT');
        await exited;
      }
      await rm(dir, { recursive: true, force: true });
    },
  };
}
