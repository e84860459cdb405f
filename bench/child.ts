import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { WideStyle } from './wide-records.js';

/** The built CLI and the bench's own scripts, next to this file in dist/. */
export const CLI = fileURLToPath(new URL('../bin/main.js', import.meta.url));
export const REPLAY_SERVER = fileURLToPath(new URL('./replay-server.js', import.meta.url));
export const WIDE_SERVER = fileURLToPath(new URL('./wide-server.js', import.meta.url));
const RUSAGE_PRELOAD = new URL('./rusage-preload.js', import.meta.url).href;

export interface ChildResult {
  readonly code: number | null;
  readonly stdout: string;
  readonly stderr: string;
  readonly wallMs: number;
  /** Peak resident set (VmHWM) in bytes, read from /proc while the child ran; 0 when /proc is missing. */
  readonly peakRssBytes: number;
  /** The last stdout line as JSON (the CLI's run summary), if any. */
  readonly summary: Record<string, unknown> | undefined;
}

function readHighWaterMark(pid: number): number {
  try {
    const status = readFileSync(`/proc/${pid}/status`, 'utf8');
    const match = /^VmHWM:\s+(\d+) kB$/m.exec(status);
    return match ? Number(match[1]) * 1024 : 0;
  } catch {
    return 0;
  }
}

/**
 * Runs node with `args` and exactly `env` (plus PATH) to its end; watches its peak RSS. `onStderr` sees every
 * chunk of stderr, for a caller that reads the whole log (ChildResult keeps only its tail).
 */
export function runNode(
  args: readonly string[],
  env: Record<string, string>,
  nodeFlags: readonly string[] = [],
  onStderr?: (chunk: string) => void,
  node: string = process.execPath,
): Promise<ChildResult> {
  const started = performance.now();
  const child = spawn(node, [...nodeFlags, ...args], {
    env: { PATH: process.env.PATH ?? '', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  let peak = 0;
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
    stdout += chunk;
  });
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => {
    onStderr?.(chunk);
    // Only the tail matters for a failure message; a long run must not hold all its logs.
    stderr = (stderr + chunk).slice(-20_000);
  });
  // VmHWM only grows: the last reading before the exit is the peak, short of the final few milliseconds.
  const watch = setInterval(() => {
    if (child.pid !== undefined) peak = Math.max(peak, readHighWaterMark(child.pid));
  }, 10);
  return new Promise((resolve, reject) => {
    child.on('error', (error) => {
      clearInterval(watch);
      reject(error);
    });
    child.on('exit', () => clearInterval(watch));
    child.on('close', (code) => {
      clearInterval(watch);
      const last = stdout.trim().split('\n').at(-1);
      let summary: Record<string, unknown> | undefined;
      try {
        summary = last ? (JSON.parse(last) as Record<string, unknown>) : undefined;
      } catch {
        summary = undefined;
      }
      resolve({ code, stdout, stderr, wallMs: performance.now() - started, peakRssBytes: peak, summary });
    });
  });
}

export interface ServerChild {
  readonly baseUrl: string;
  /** The whole first line the server printed (baseUrl and whatever else it tells). */
  readonly ready: Readonly<Record<string, unknown>>;
  stop(): Promise<void>;
}

/** Starts a server child that prints {"baseUrl": …} as its first stdout line; stop() ends it with SIGTERM. */
export function startServer(args: readonly string[]): Promise<ServerChild> {
  const child: ChildProcess = spawn(process.execPath, args, {
    env: { PATH: process.env.PATH ?? '', LOG_LEVEL: 'warn' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stderr = '';
  child.stderr?.setEncoding('utf8').on('data', (chunk: string) => {
    stderr = (stderr + chunk).slice(-5000);
  });
  const closed = new Promise<void>((resolve) => child.on('close', () => resolve()));
  return new Promise((resolve, reject) => {
    let buffered = '';
    const onData = (chunk: string): void => {
      buffered += chunk;
      const newline = buffered.indexOf('\n');
      if (newline === -1) return;
      child.stdout?.off('data', onData);
      try {
        const ready = JSON.parse(buffered.slice(0, newline)) as Record<string, unknown> & { baseUrl: string };
        resolve({
          baseUrl: ready.baseUrl,
          ready,
          stop: async () => {
            child.kill('SIGTERM');
            await closed;
          },
        });
      } catch (error) {
        reject(error);
      }
    };
    child.stdout?.setEncoding('utf8').on('data', onData);
    child.on('error', reject);
    child.on('exit', (code) => {
      if (code !== null && code !== 0)
        reject(new Error(`server ${args.join(' ')} exited ${code}: ${stderr}`));
    });
  });
}

/** The simulator of the built CLI in a child process. */
export function startSimulatorChild(options: {
  postsPerDay: number;
  generationDelayMs?: number;
  latencyMs?: number;
  seed?: number;
}): Promise<ServerChild> {
  return startServer([
    CLI,
    'simulator',
    '--port',
    '0',
    '--seed',
    String(options.seed ?? 1),
    '--posts-per-day',
    String(options.postsPerDay),
    '--generation-delay-ms',
    String(options.generationDelayMs ?? 0),
    '--latency-ms',
    String(options.latencyMs ?? 0),
  ]);
}

/** A caching replay proxy in front of an in-process simulator (see replay-server.ts). */
export function startReplayChild(postsPerDay: number): Promise<ServerChild> {
  return startServer([REPLAY_SERVER, '--posts-per-day', String(postsPerDay)]);
}

/** A page server of the wide workload (see wide-server.ts): every page made before it answers. */
export function startWideChild(options: {
  posts: number;
  seed: number;
  style: WideStyle;
}): Promise<ServerChild> {
  return startServer([
    WIDE_SERVER,
    '--posts',
    String(options.posts),
    '--seed',
    String(options.seed),
    '--style',
    options.style,
  ]);
}

/** What runs the connector children of a figure: a node binary and a build of the CLI. */
export interface Connector {
  /** The node binary. */
  readonly node: string;
  /** Its version (process.versions.node). */
  readonly nodeVersion: string;
  /** The CLI of the build (dist/bin/main.js; dist/src/cli/main.js for a build before it was bundled). */
  readonly cli: string;
  /** The build's commit (short hash, `+` when its sources have changes), or '' outside a git checkout. */
  readonly build: string;
}

function buildOf(cli: string): string {
  const dir = dirname(cli);
  try {
    const commit = execFileSync('git', ['-C', dir, 'rev-parse', '--short', 'HEAD'], {
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'ignore'],
    }).trim();
    const changes = execFileSync('git', ['-C', dir, 'status', '--porcelain', '--', ':/src'], {
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'ignore'],
    }).trim();
    return `${commit}${changes === '' ? '' : '+'}`;
  } catch {
    return '';
  }
}

/** The connectors of every build and node binary given, builds outermost. */
export function connectors(clis: readonly string[], nodes: readonly string[]): Connector[] {
  const out: Connector[] = [];
  for (const cliPath of clis) {
    const cli = resolve(cliPath);
    const build = buildOf(cli);
    for (const node of nodes) {
      const nodeVersion = execFileSync(node, ['-p', 'process.versions.node'], { encoding: 'utf8' }).trim();
      out.push({ node, nodeVersion, cli, build });
    }
  }
  return out;
}

/** "Node 24.21.0, 3948b40": what a figure was measured on. */
export function connectorLabel(connector: Connector): string {
  return `Node ${connector.nodeVersion}${connector.build === '' ? '' : `, ${connector.build}`}`;
}

export interface CliResult extends ChildResult {
  /** User plus system CPU time of the child, every thread; null when it died before reporting it. */
  readonly cpuMs: number | null;
  /** Its peak RSS as the kernel counted it (getrusage), bytes; null as cpuMs. */
  readonly maxRssBytes: number | null;
}

let rusageDir: string | undefined;
let rusageFiles = 0;

/** Runs the connector's CLI with `args` on its node binary, and reads the CPU time it used. */
export async function runCli(
  connector: Connector,
  args: readonly string[],
  env: Record<string, string>,
  nodeFlags: readonly string[] = [],
  onStderr?: (chunk: string) => void,
): Promise<CliResult> {
  if (rusageDir === undefined) {
    const dir = mkdtempSync(join(tmpdir(), 'bench-rusage-'));
    rusageDir = dir;
    process.once('exit', () => rmSync(dir, { recursive: true, force: true }));
  }
  rusageFiles += 1;
  const file = join(rusageDir, `${rusageFiles}.json`);
  const result = await runNode(
    [connector.cli, ...args],
    { ...env, BENCH_RUSAGE_FILE: file },
    [`--import=${RUSAGE_PRELOAD}`, ...nodeFlags],
    onStderr,
    connector.node,
  );
  try {
    const usage = JSON.parse(readFileSync(file, 'utf8')) as {
      userUs: number;
      systemUs: number;
      maxRssKb: number;
    };
    rmSync(file, { force: true });
    return { ...result, cpuMs: (usage.userUs + usage.systemUs) / 1000, maxRssBytes: usage.maxRssKb * 1024 };
  } catch {
    return { ...result, cpuMs: null, maxRssBytes: null };
  }
}
