import { spawn } from 'node:child_process';
import { CLI } from './cli.js';
import { withTestClock } from './today.js';

export interface TerminalResult {
  readonly code: number | null;
  /** Everything the terminal showed (stdout and stderr together), lines ending in \r\n as a terminal has them. */
  readonly output: string;
}

export interface TerminalOptions {
  /** Types `text` once the terminal has shown `after` (a question's prompt). */
  readonly answer?: { readonly after: string; readonly text: string };
  /**
   * Pipes the CLI's stdout and stderr through `tee` (`… 2>&1 | tee`), as a person keeping a log does: stdin stays
   * the terminal. The exit code is the CLI's, not tee's.
   */
  readonly throughTee?: boolean;
}

/** A word the shell takes as it is. */
function quote(word: string): string {
  return `'${word.replaceAll("'", `'\\''`)}'`;
}

/**
 * Runs the built CLI on a pseudo-terminal (util-linux `script`), with exactly `env` (plus PATH, and the tests'
 * clock: see withTestClock): stdin, stdout and stderr are all the terminal, as when a person runs it.
 */
export function runOnTerminal(
  args: readonly string[],
  env: Record<string, string>,
  options: TerminalOptions = {},
): Promise<TerminalResult> {
  const cli = [process.execPath, CLI, ...args].map(quote).join(' ');
  const command =
    options.throughTee === true ? `{ ${cli}; echo "exit code $?" >&2; } 2>&1 | tee /dev/null` : cli;
  const child = spawn('script', ['-qfec', command, '/dev/null'], {
    env: withTestClock({ PATH: process.env.PATH ?? '', TERM: 'xterm', ...env }),
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  let output = '';
  let answered = false;
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
    output += chunk;
    const answer = options.answer;
    if (answer !== undefined && !answered && output.includes(answer.after)) {
      answered = true;
      child.stdin.write(answer.text);
    }
  });
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => {
    output += chunk;
  });
  return new Promise((resolve, reject) => {
    child.on('error', reject);
    child.on('close', (code) => {
      child.stdin.destroy();
      const piped = /exit code (\d+)/.exec(output)?.[1];
      resolve({ code: options.throughTee === true && piped !== undefined ? Number(piped) : code, output });
    });
  });
}

/** The summary line a run printed on the terminal, parsed. */
export function terminalSummary(output: string): Record<string, unknown> | undefined {
  const line = output.split(/\r?\n/).findLast((l) => l.startsWith('{"command"'));
  return line === undefined ? undefined : (JSON.parse(line) as Record<string, unknown>);
}

/** The terminal's lines without colours, cursor moves and carriage returns. */
export function terminalLines(output: string): string[] {
  return (
    output
      // biome-ignore lint/suspicious/noControlCharactersInRegex: terminal escape sequences
      .replace(/\u001b\[[0-9;?]*[A-Za-z]/g, '')
      .split(/\r?\n|\r/)
      .map((line) => line.trimEnd())
      .filter((line) => line !== '')
  );
}
