import { Writable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { commandContext } from '../../src/cli/context.js';
import { printError, printSummary } from '../../src/cli/run-output.js';
import { createLogger, prettyDestination } from '../../src/logger.js';
import { connectionSecrets, Scrubber, secretForms } from '../../src/secret.js';

const TOKEN = 'tok-3f9a"b\\c';
// A password as people choose them: quotes, backslashes and characters a URL encodes.
const PASSWORD = 'p"a\\ss/w@rd?&é';

function capture(pretty = false): { logger: ReturnType<typeof createLogger>; text: () => string } {
  const lines: string[] = [];
  const sink = new Writable({
    write(chunk: Buffer, _encoding, done) {
      lines.push(chunk.toString('utf8'));
      done();
    },
  });
  // As the CLI writes to a terminal (pino-pretty), or JSON lines.
  const destination = pretty ? prettyDestination(sink) : { write: (line: string) => lines.push(line) };
  const logger = createLogger({ level: 'debug', secrets: [TOKEN, PASSWORD], destination, pretty });
  return { logger, text: () => lines.join('') };
}

describe('the logger scrubs every secret it knows, in every form, from every line', () => {
  it('as it is, JSON-escaped, URL-encoded, in a message, a field, a nested field and an error', () => {
    const { logger, text } = capture();
    const url = `postgres://etl:${encodeURIComponent(PASSWORD)}@db.example.com/reports`;
    logger.info(`connecting with ${PASSWORD}`);
    logger.info(
      { url, detail: { body: JSON.stringify({ password: PASSWORD, token: TOKEN }) } },
      'raw %s',
      TOKEN,
    );
    logger.warn({ list: [PASSWORD, { deep: `x${TOKEN}y` }] }, 'in a list');
    logger.error({ err: new Error(`rejected: ${JSON.stringify(PASSWORD)} at ${url}`) }, 'failed');
    const out = text();
    for (const secret of [TOKEN, PASSWORD]) {
      for (const form of secretForms(secret)) expect(out, form).not.toContain(form);
    }
    // The lines are still there, with the secret's place marked.
    expect(out.split('\n').filter((line) => line.includes('[redacted]')).length).toBeGreaterThanOrEqual(4);
    expect(out).toContain('db.example.com');
  });

  it('on a terminal, writes the control characters of a value as escapes', () => {
    const { logger, text } = capture(true);
    logger.info({ reportId: 'r1\u001b]0;owned\u0007', status: 'DONE\u009b2J' }, 'report \u001b[31mred\u202e');
    const out = text();
    for (const control of ['\u001b]', '\u0007', '\u009b', '\u202e', '\u001b[31m']) {
      expect(out).not.toContain(control);
    }
    expect(out).toContain('\\u001b]0;owned\\u0007');
  });
});

describe('what the CLI prints besides the log', () => {
  const io = () => {
    const out: string[] = [];
    const stream = { write: (text: string) => out.push(text) } as unknown as NodeJS.WritableStream;
    return { out, io: { stdout: stream, stderr: stream, signal: new AbortController().signal } };
  };

  it('escapes the control characters of an error message and of the summary', () => {
    const { out, io: streams } = io();
    printError(streams, new Error('report "r\u001b[2J" failed: \u009b31m'));
    printSummary(streams, { error: { message: 'status \u009b1;1H\u202e' } });
    const text = out.join('');
    for (const control of ['\u001b', '\u009b', '\u202e']) expect(text).not.toContain(control);
    expect(JSON.parse(out[1]!)).toEqual({ error: { message: 'status \u009b1;1H\u202e' } });
  });
});

describe('what the CLI prints besides the log, with the secrets the configuration names', () => {
  it('is scrubbed of every form of them', () => {
    const out: string[] = [];
    const stream = { write: (text: string) => out.push(text) } as unknown as NodeJS.WritableStream;
    const streams = { stdout: stream, stderr: stream, signal: new AbortController().signal };
    const scrubber = new Scrubber([PASSWORD]);
    const scrub = (text: string) => scrubber.text(text);
    printError(streams, new Error(`login failed with ${encodeURIComponent(PASSWORD)}`), scrub);
    printSummary(streams, { error: { message: `rejected ${PASSWORD}` } }, scrub);
    const text = out.join('');
    for (const form of secretForms(PASSWORD)) expect(text).not.toContain(form);
    expect(text).toContain('[redacted]');
  });
});

describe("the CLI's logger", () => {
  it('knows the token, the database password, PGPASSWORD and the proxy password', () => {
    const lines: string[] = [];
    const logSink = new Writable({
      write(chunk: Buffer, _encoding, done) {
        lines.push(chunk.toString('utf8'));
        done();
      },
    });
    const context = commandContext({}, { api: true, db: true }, new AbortController().signal, {
      env: {
        POST_REPORTS_BASE_URL: 'https://api.example.com/v4',
        POST_REPORTS_TOKEN: TOKEN,
        DATABASE_URL: `postgres://etl:${encodeURIComponent(PASSWORD)}@127.0.0.1/reports`,
        PGPASSWORD: 'env-pw-4821',
        HTTPS_PROXY: 'http://me:proxy-pw-7730@proxy.example.com:3128',
        LOG_FORMAT: 'json',
      },
      logSink,
    });
    context.logger.info(
      { all: [TOKEN, PASSWORD, 'env-pw-4821', 'proxy-pw-7730'] },
      `also ${JSON.stringify(PASSWORD)}`,
    );
    const out = lines.join('');
    for (const secret of [TOKEN, PASSWORD, 'env-pw-4821', 'proxy-pw-7730']) {
      for (const form of secretForms(secret)) expect(out, form).not.toContain(form);
    }
    expect(context.scrub(`x proxy-pw-7730 y`)).toBe('x [redacted] y');
  });
});

describe('connectionSecrets', () => {
  it('knows the password of a connection string, its ?password= parameter and PGPASSWORD', () => {
    const url = `postgres://etl:${encodeURIComponent(PASSWORD)}@db/reports?password=other%20one`;
    expect(connectionSecrets(url, { PGPASSWORD: 'from-env' })).toEqual(
      expect.arrayContaining([PASSWORD, 'other one', 'from-env']),
    );
    expect(connectionSecrets('postgres://etl@db/reports', {})).toEqual([]);
  });
});
