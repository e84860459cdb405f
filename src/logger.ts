import { type DestinationStream, type Logger, pino } from 'pino';
import { build as prettyStream } from 'pino-pretty';

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
  return prettyStream({
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

function scrub(line: string, secrets: readonly string[]): string {
  let out = line;
  for (const secret of secrets) {
    if (out.includes(secret)) out = out.split(secret).join('[redacted]');
  }
  return out;
}
