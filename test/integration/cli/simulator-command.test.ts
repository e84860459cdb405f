import { PassThrough } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { parseOrganizationFlag, simulatorCommand } from '../../../src/cli/simulator-command.js';
import { ConfigError } from '../../../src/errors.js';
import { REQUEST_FAULTS } from '../../../src/simulator/faults.js';

/** The options commander hands the command with every default, plus `flags`. */
function options(flags: Record<string, unknown>): Record<string, unknown> {
  return {
    port: '0',
    host: '127.0.0.1',
    seed: '1',
    postsPerDay: '5',
    generationDelayMs: '0',
    latencyMs: '0',
    failReportShare: '0',
    ...Object.fromEntries(REQUEST_FAULTS.map((fault) => [fault.share, '0'])),
    ...flags,
  };
}

interface Started {
  readonly stop: () => void;
  readonly done: Promise<number>;
  readonly stderr: () => string;
  /** The first stdout line, once written. */
  readonly ready: Promise<{ baseUrl: string }>;
}

/** Runs the simulator command in-process until stop(). */
function start(flags: Record<string, unknown>): Started {
  const stdout = new PassThrough();
  const stderr = new PassThrough();
  let errors = '';
  stderr.setEncoding('utf8').on('data', (chunk: string) => {
    errors += chunk;
  });
  const controller = new AbortController();
  const ready = new Promise<{ baseUrl: string }>((resolve) => {
    let text = '';
    stdout.setEncoding('utf8').on('data', (chunk: string) => {
      text += chunk;
      const line = text.split('\n', 2);
      if (line.length === 2) resolve(JSON.parse(line[0] ?? '') as { baseUrl: string });
    });
  });
  const done = simulatorCommand({ stdout, stderr, signal: controller.signal }, options(flags));
  return { stop: () => controller.abort(), done, stderr: () => errors, ready };
}

async function dimensions(baseUrl: string, token: string): Promise<{ status: number; brands: unknown }> {
  const response = await fetch(`${baseUrl}/reports/posts/dimensions`, {
    headers: { authorization: `Bearer ${token}` },
  });
  // An error's body takes any of the service's shapes (text among them): only a success is read as JSON.
  if (!response.ok) return { status: response.status, brands: undefined };
  const body = (await response.json()) as { brands?: unknown };
  return { status: response.status, brands: body.brands };
}

describe('--organization TOKEN:SEED', () => {
  it('reads a token and a seed', () => {
    expect(parseOrganizationFlag('org-a:7')).toEqual({ token: 'org-a', seed: 7 });
    expect(parseOrganizationFlag('A.b_c-~!@#:0')).toEqual({ token: 'A.b_c-~!@#', seed: 0 });
    expect(parseOrganizationFlag(`t:${2 ** 31}`)).toEqual({ token: 't', seed: 2 ** 31 });
  });

  it.each([
    'org-a',
    'org-a:',
    ':7',
    'a:b:7',
    'a b:7',
    'ä:7',
    'a:-1',
    'a:1.5',
    'a:7x',
    `a:${2 ** 31 + 1}`,
    'a:99999999999',
  ])('refuses %j with one line naming it', (value) => {
    let error: unknown;
    try {
      parseOrganizationFlag(value);
    } catch (caught) {
      error = caught;
    }
    expect(error).toBeInstanceOf(ConfigError);
    expect((error as ConfigError).code).toBe('CONFIG_INVALID');
    expect((error as ConfigError).message).toContain(JSON.stringify(value));
    expect((error as ConfigError).message).not.toContain('\n');
  });
});

describe('the simulator command', () => {
  it('serves each --organization under its token, printing each token', async () => {
    const run = start({ organization: ['org-a:1', 'org-b:2'] });
    try {
      const { baseUrl } = await run.ready;
      const a = await dimensions(baseUrl, 'org-a');
      const b = await dimensions(baseUrl, 'org-b');
      expect(a.status).toBe(200);
      expect(b.status).toBe(200);
      expect(a.brands).not.toEqual(b.brands);
      expect((await dimensions(baseUrl, 'sim-token')).status).toBe(401);
      expect(run.stderr()).toContain(`simulator serving ${baseUrl} (token org-a, seed 1)\n`);
      expect(run.stderr()).toContain(`simulator serving ${baseUrl} (token org-b, seed 2)\n`);
    } finally {
      run.stop();
    }
    expect(await run.done).toBe(0);
  });

  it('serves the one token of --token, or sim-token, without --organization', async () => {
    for (const [flags, token] of [
      [{}, 'sim-token'],
      [{ token: 'mine' }, 'mine'],
    ] as const) {
      const run = start(flags);
      try {
        const { baseUrl } = await run.ready;
        expect((await dimensions(baseUrl, token)).status).toBe(200);
        expect(run.stderr()).toBe(`post-reports-etl: simulator serving ${baseUrl} (token ${token})\n`);
      } finally {
        run.stop();
      }
      expect(await run.done).toBe(0);
    }
  });

  it.each([
    [{ organization: ['org-a:1', 'bad value'] }, '"bad value"'],
    [{ organization: ['org-a:1', 'org-a:2'] }, 'the token "org-a" is given twice'],
    [{ organization: ['org-a:1'], token: 'other' }, '--token and --organization exclude each other'],
  ])('refuses %j with one error line', async (flags, message) => {
    const run = start(flags);
    expect(await run.done).toBe(2);
    const lines = run.stderr().trimEnd().split('\n');
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(/^post-reports-etl: error: /);
    expect(lines[0]).toContain(message);
  });
});
