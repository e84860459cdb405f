import { type ChildProcess, spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { withTestClock } from './today.js';

/** The built CLI (npm test builds it first: see the `pretest` script). */
export const CLI = fileURLToPath(new URL('../../dist/bin/main.js', import.meta.url));

export interface CliResult {
  readonly code: number | null;
  readonly signal: NodeJS.Signals | null;
  readonly stdout: string;
  readonly stderr: string;
  /** The last stdout line parsed as JSON (the run summary), if any. */
  readonly summary: Record<string, unknown> | undefined;
}

export interface CliRun {
  readonly child: ChildProcess;
  readonly done: Promise<CliResult>;
  /** Resolves when stderr has printed a line containing `text`. */
  waitForOutput(text: string): Promise<void>;
  /** What stderr has printed so far. */
  stderrSoFar(): string;
}

export interface CliOptions {
  /** The CLI's main.js when not this checkout's (a copy of the built package). */
  readonly cli?: string;
  /** Working directory of the CLI (default: the test process's). */
  readonly cwd?: string;
}

/**
 * Starts the CLI as a child process with exactly `env` (plus PATH, and the tests' clock unless `env` sets
 * POST_REPORTS_NOW: see withTestClock), never the test process's own environment, so that nothing leaks in from the
 * developer's shell.
 */
export function startCli(
  args: readonly string[],
  env: Record<string, string>,
  options: CliOptions = {},
): CliRun {
  const child = spawn(process.execPath, [options.cli ?? CLI, ...args], {
    env: withTestClock({ PATH: process.env.PATH ?? '', LOG_FORMAT: 'json', ...env }),
    stdio: ['ignore', 'pipe', 'pipe'],
    ...(options.cwd === undefined ? {} : { cwd: options.cwd }),
  });
  let stdout = '';
  let stderr = '';
  const waiters: { text: string; resolve: () => void }[] = [];
  child.stdout?.setEncoding('utf8').on('data', (chunk: string) => {
    stdout += chunk;
  });
  child.stderr?.setEncoding('utf8').on('data', (chunk: string) => {
    stderr += chunk;
    for (const w of [...waiters]) {
      if (stderr.includes(w.text)) {
        waiters.splice(waiters.indexOf(w), 1);
        w.resolve();
      }
    }
  });
  const done = new Promise<CliResult>((resolve, reject) => {
    child.on('error', reject);
    child.on('close', (code, signal) => {
      resolve({ code, signal, stdout, stderr, summary: lastJsonLine(stdout) });
    });
  });
  return {
    child,
    done,
    stderrSoFar: () => stderr,
    waitForOutput(text: string) {
      if (stderr.includes(text)) return Promise.resolve();
      return new Promise<void>((resolve) => waiters.push({ text, resolve }));
    },
  };
}

/** Runs the CLI to the end. */
export function runCli(
  args: readonly string[],
  env: Record<string, string>,
  options: CliOptions = {},
): Promise<CliResult> {
  return startCli(args, env, options).done;
}

/** The last line of `stdout` parsed as JSON (a run's summary), if it is JSON. */
function lastJsonLine(stdout: string): Record<string, unknown> | undefined {
  const last = stdout.trim().split('\n').at(-1);
  try {
    return last ? (JSON.parse(last) as Record<string, unknown>) : undefined;
  } catch {
    return undefined;
  }
}

export interface ProgramOptions {
  readonly cwd?: string;
  /** A process group of its own, so that a test can kill it whole (a shell and its pipeline). */
  readonly detached?: boolean;
  /** Told of the child as soon as it exists (to kill it if the test ends first). */
  readonly onSpawn?: (child: ChildProcess) => void;
}

/** Runs any program to the end with exactly `env` (and the tests' clock, for the CLI it runs), as startCli does. */
export function runProgram(
  file: string,
  args: readonly string[],
  env: Record<string, string>,
  options: ProgramOptions = {},
): Promise<CliResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(file, args, {
      env: withTestClock(env),
      stdio: ['ignore', 'pipe', 'pipe'],
      ...(options.cwd === undefined ? {} : { cwd: options.cwd }),
      ...(options.detached ? { detached: true } : {}),
    });
    options.onSpawn?.(child);
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
      stdout += chunk;
    });
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => {
      stderr += chunk;
    });
    child.on('error', reject);
    child.on('close', (code, signal) =>
      resolve({ code, signal, stdout, stderr, summary: lastJsonLine(stdout) }),
    );
  });
}
