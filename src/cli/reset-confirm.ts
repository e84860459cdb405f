import { createInterface } from 'node:readline/promises';
import type { Config } from '../config.js';
import { ConfigError } from '../errors.js';
import { closePool, createPool } from '../load/database.js';
import type { Logger } from '../logger.js';
import { describeReset, readResetPreview, removesSomething } from '../pipeline/reset-preview.js';
import { runScope } from '../pipeline/run-context.js';
import type { Io } from './run-output.js';

/**
 * Whether a person is at the keyboard and sees all that is said: stdin, stdout and stderr are all a terminal. A
 * run piped to `tee` or a log is not, though a person may have typed it: what it removes must then be asked for.
 */
export function onTerminal(io: Io): boolean {
  return (
    (io.stdin as Partial<NodeJS.ReadStream> | undefined)?.isTTY === true &&
    (io.stdout as Partial<NodeJS.WriteStream>).isTTY === true &&
    (io.stderr as Partial<NodeJS.WriteStream>).isTTY === true
  );
}

/**
 * Before a --reset: says what it will remove, then on a terminal asks, and off one needs --yes. Throws
 * ConfigError (exit 2) when the person declines, or when nobody was asked and --yes was not given: nothing is
 * removed.
 */
export async function confirmReset(io: Io, config: Config, logger: Logger, yes: boolean): Promise<void> {
  const pool = createPool(config.db, logger, { max: 1 });
  let preview: Awaited<ReturnType<typeof readResetPreview>>;
  try {
    preview = await readResetPreview(pool, runScope(config));
  } finally {
    await closePool(pool, logger);
  }
  io.stderr.write(`post-reports-etl: ${describeReset(runScope(config), preview)}\n`);
  if (yes || !removesSomething(preview)) return;
  if (!onTerminal(io) || io.stdin === undefined) {
    throw new ConfigError(
      'RESET_DECLINED',
      '--reset removes loaded rows and there is no terminal to ask: add --yes to remove them (nothing was removed)',
    );
  }
  const prompt = createInterface({ input: io.stdin, output: io.stderr, terminal: true });
  try {
    const answer = await prompt.question('Remove them and start over? [y/N] ', { signal: io.signal });
    if (/^\s*y(es)?\s*$/i.test(answer)) return;
  } catch (error) {
    if (io.signal.aborted) throw io.signal.reason;
    throw error;
  } finally {
    prompt.close();
  }
  throw new ConfigError('RESET_DECLINED', '--reset declined: nothing was removed');
}
