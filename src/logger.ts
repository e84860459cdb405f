import { createRequire } from 'node:module';
import { type DestinationStream, type Logger, pino } from 'pino';
import type PinoPretty from 'pino-pretty';
import { isConnectionLoss } from './errors.js';

export type { Logger } from 'pino';

export interface LoggerOptions {
  level?: string;
  /** Human-readable output (pino-pretty); JSON otherwise. */
  pretty?: boolean;
  /** Strings scrubbed from every line, whatever field they hide in (the API token). */
  secrets?: readonly string[];
  /** Defaults to stderr: stdout is reserved for the run summary. */
  destination?: DestinationStream;
}

const REDACT_PATHS = [
  'token',
  '*.token',
  'authorization',
  '*.authorization',
  'headers.authorization',
  '*.headers.authorization',
  'password',
  '*.password',
];

/**
 * Log lines for a person at a terminal: one line an event, without the fields every line of a run repeats (its
 * id, its command, the process) nor the bulky ones the summary line or a count already says (the summary, the
 * list of new columns). In-process and synchronous: a worker-thread transport could lose the last lines when the
 * CLI exits.
 */
export function prettyDestination(destination: number | NodeJS.WritableStream): DestinationStream {
  // Required here, not imported: only a person's terminal needs it, and a scheduled run starts without its code.
  const { build } = createRequire(import.meta.url)('pino-pretty') as typeof PinoPretty;
  return build({
    destination,
    sync: true,
    colorize: true,
    singleLine: true,
    translateTime: 'HH:MM:ss',
    ignore: 'pid,hostname,runId,command,summary,columns',
  });
}

/** Builds the one logger of a process; everything else receives it (or a child) as an argument. */
export function createLogger(options: LoggerOptions = {}): Logger {
  const secrets = (options.secrets ?? []).filter((s) => s.length > 0);
  const destination =
    options.destination ??
    (options.pretty ? prettyDestination(2) : pino.destination({ dest: 2, sync: true }));
  return pino(
    {
      level: options.level ?? 'info',
      redact: { paths: REDACT_PATHS, censor: '[redacted]' },
      serializers: { err: serializeError },
      ...(secrets.length > 0
        ? {
            hooks: {
              // The last line of defence: a secret that slipped into a message or an error's text is scrubbed.
              streamWrite: (line: string) => scrub(line, secrets),
            },
          }
        : {}),
    },
    destination,
  );
}

/**
 * pino's error serializer, without the stack trace of an error that carries a code (the connector's own, a
 * SQLSTATE, a network errno) or wraps one: its one-line message says what happened, and a database or network
 * failure is not a bug to trace. Unexpected errors keep their stack.
 */
function serializeError(error: unknown): unknown {
  if (!(error instanceof Error)) return error;
  const serialized: Record<string, unknown> = { ...pino.stdSerializers.err(error) };
  if (hasCode(error) || isConnectionLoss(error)) delete serialized.stack;
  return serialized;
}

function hasCode(error: unknown): boolean {
  for (let e: unknown = error, depth = 0; e instanceof Error && depth < 5; e = e.cause, depth++) {
    if ('code' in e && typeof e.code === 'string') return true;
  }
  return false;
}

function scrub(line: string, secrets: readonly string[]): string {
  let out = line;
  for (const secret of secrets) {
    if (out.includes(secret)) out = out.split(secret).join('[redacted]');
  }
  return out;
}
