import type { Command, CommanderError } from 'commander';
import { EXIT } from '../pipeline/exit-codes.js';
import { VERSION } from '../version.js';
import { type Io, printSummary } from './run-output.js';

const PREFIX = 'post-reports-etl: error: ';

/** The commands whose result is a JSON line on stdout: a usage error prints one too, for the scheduler reading it. */
const SUMMARY_COMMANDS = new Set(['backfill', 'sync', 'migrate']);

/** The summary line of a command refused for its usage, before it did anything. */
function usageSummary(command: string, message: string): Record<string, unknown> {
  return {
    command,
    version: VERSION,
    status: 'invalid',
    exitCode: EXIT.usage,
    durationMs: 0,
    error: { code: 'CONFIG_INVALID', message },
  };
}

/** Whether the summary line goes out: to a pipe or a file, where a scheduler reads it, not to a person's terminal. */
function summaryWanted(io: Io, command: string): boolean {
  return SUMMARY_COMMANDS.has(command) && (io.stdout as Partial<NodeJS.WriteStream>).isTTY !== true;
}

/** Refuses the command line: one line on stderr, the summary line where the command prints one, exit 2. */
export function failUsage(io: Io, command: string, message: string): never {
  io.stderr.write(`${PREFIX}${message}\n`);
  if (summaryWanted(io, command)) printSummary(io, usageSummary(command, message));
  process.exit(EXIT.usage);
}

/** commander's message on one line, without its own `error: ` prefix. */
function oneLineMessage(text: string): string {
  return text
    .replace(/^error: /, '')
    .replace(/\s*\n\s*/g, ' ')
    .trim();
}

/**
 * Makes commander's usage errors (unknown or misspelt option, missing option value, extra argument) the CLI's:
 * one line naming what was typed and the nearest option, a hint to --help, the summary line, exit 2. commander
 * applies these settings to the command they are set on only, so every command gets them.
 */
export function reportUsageErrors(command: Command, io: Io): Command {
  const name = command.name();
  const full = command.parent === null ? name : `post-reports-etl ${name}`;
  let message = '';
  command
    .configureOutput({
      writeErr: (text) => io.stderr.write(text),
      outputError: (text) => {
        message = oneLineMessage(text);
        io.stderr.write(`${PREFIX}${message}\n`);
      },
    })
    .showHelpAfterError(`(${full} --help lists the options)`)
    .exitOverride((error: CommanderError) => {
      if (error.exitCode === 0) process.exit(0);
      if (message !== '' && summaryWanted(io, name)) printSummary(io, usageSummary(name, message));
      process.exit(EXIT.usage);
    });
  for (const sub of command.commands) reportUsageErrors(sub, io);
  return command;
}
