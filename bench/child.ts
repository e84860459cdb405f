import { type ChildProcess, spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

/** The built CLI and the bench's own scripts, next to this file in dist/. */
export const CLI = fileURLToPath(new URL('../src/cli/main.js', import.meta.url));
export const REPLAY_SERVER = fileURLToPath(new URL('./replay-server.js', import.meta.url));

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
): Promise<ChildResult> {
  const started = performance.now();
  const child = spawn(process.execPath, [...nodeFlags, ...args], {
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
        const { baseUrl } = JSON.parse(buffered.slice(0, newline)) as { baseUrl: string };
        resolve({
          baseUrl,
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
