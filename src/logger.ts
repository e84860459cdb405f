import { createRequire } from 'node:module';
import { type DestinationStream, type LogFn, type Logger, pino } from 'pino';
import type PinoPretty from 'pino-pretty';
import { isConnectionLoss } from './error-policy.js';
import { Scrubber, terminalSafe } from './secret.js';

export type { Logger } from 'pino';

export interface LoggerOptions {
  level?: string;
  /** Human-readable output (pino-pretty); JSON otherwise. */
  pretty?: boolean;
  /** Colour in human-readable output (default true; NO_COLOR turns it off). */
  color?: boolean;
  /** Secrets scrubbed from every line in every form (secret.ts secretForms), whatever field they hide in. */
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
export function prettyDestination(
  destination: number | NodeJS.WritableStream,
  colorize = true,
): DestinationStream {
  // Required here, not imported: only a person's terminal needs it, and a scheduled run starts without its code.
  const { build } = createRequire(import.meta.url)('pino-pretty') as typeof PinoPretty;
  return build({
    destination,
    sync: true,
    colorize,
    singleLine: true,
    translateTime: 'HH:MM:ss',
    ignore: 'pid,hostname,runId,command,summary,columns',
  });
}

/** Builds the one logger of a process; everything else receives it (or a child) as an argument. */
export function createLogger(options: LoggerOptions = {}): Logger {
  const scrubber = new Scrubber(options.secrets ?? []);
  const pretty = options.pretty === true;
  const destination =
    options.destination ??
    (pretty ? prettyDestination(2, options.color ?? true) : pino.destination({ dest: 2, sync: true }));
  // On a terminal, text from the API (ids, statuses, field names, errors) shows its control characters instead of
  // obeying them; JSON lines escape them already.
  const clean = (text: string): string => (pretty ? terminalSafe(scrubber.text(text)) : scrubber.text(text));
  const cleans = scrubber.active || pretty;
  return pino(
    {
      level: options.level ?? 'info',
      redact: { paths: REDACT_PATHS, censor: '[redacted]' },
      serializers: {
        err: cleans ? (error: unknown) => scrubber.value(serializeError(error), 0, clean) : serializeError,
      },
      ...(cleans
        ? {
            hooks: {
              // Secrets are scrubbed from the values before they are serialized, in every form they may take
              // (secretForms): a JSON-escaped or URL-encoded password is not the secret's own text in the line.
              logMethod(args: Parameters<LogFn>, method: LogFn) {
                const scrubbed = args.map((arg) => scrubber.value(arg, 0, clean)) as Parameters<LogFn>;
                return method.apply(this, scrubbed);
              },
              // The last line of defence: a secret that slipped through a serializer is scrubbed from the line.
              ...(scrubber.active ? { streamWrite: (line: string) => scrubber.text(line) } : {}),
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
