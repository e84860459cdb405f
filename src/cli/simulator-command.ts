import { ConfigError } from '../errors.js';
import { REQUEST_FAULTS } from '../simulator/faults.js';
import { type SimulatorOrganization, startSimulator } from '../simulator/server.js';
import { type Io, printError } from './run-output.js';

const MAX_SEED = 2 ** 31;

function text(options: Readonly<Record<string, unknown>>, key: string): string | undefined {
  const value = options[key];
  return typeof value === 'string' ? value : undefined;
}

function number(name: string, text: string | undefined, min: number, max: number): number {
  const value = Number(text);
  if (text === undefined || text.trim() === '' || !Number.isFinite(value) || value < min || value > max) {
    throw new ConfigError(
      'CONFIG_INVALID',
      `--${name} must be a number from ${min} to ${max}, got ${JSON.stringify(text)}`,
    );
  }
  return value;
}

/**
 * One `--organization TOKEN:SEED`: the token (printable ASCII without spaces or ':') an organization is served
 * under, and the seed its data is drawn from (an integer from 0 to 2^31, as --seed).
 */
export function parseOrganizationFlag(value: string): { token: string; seed: number } {
  const match = /^([\x21-\x39\x3b-\x7e]+):(\d{1,10})$/.exec(value);
  const seed = Number(match?.[2]);
  if (match === null || !(seed <= MAX_SEED)) {
    throw new ConfigError(
      'CONFIG_INVALID',
      `--organization must be TOKEN:SEED (TOKEN printable ASCII without spaces or ':', SEED an integer from 0 to ${MAX_SEED}), got ${JSON.stringify(value)}`,
    );
  }
  return { token: match[1] ?? '', seed };
}

/** The organizations of the --organization flags (none: the one of --token and --seed). */
function organizationsOf(options: Readonly<Record<string, unknown>>): SimulatorOrganization[] | undefined {
  const flags = options.organization;
  if (!Array.isArray(flags) || flags.length === 0) return undefined;
  if (text(options, 'token') !== undefined) {
    throw new ConfigError(
      'CONFIG_INVALID',
      '--token and --organization exclude each other: give each organization its token as --organization TOKEN:SEED',
    );
  }
  const organizations = flags.map((flag) => parseOrganizationFlag(String(flag)));
  const tokens = new Set<string>();
  for (const { token } of organizations) {
    if (tokens.has(token)) {
      throw new ConfigError(
        'CONFIG_INVALID',
        `--organization: the token ${JSON.stringify(token)} is given twice`,
      );
    }
    tokens.add(token);
  }
  return organizations;
}

/** `simulator`: serves the v4 simulator until SIGINT/SIGTERM. */
export async function simulatorCommand(io: Io, options: Readonly<Record<string, unknown>>): Promise<number> {
  try {
    const organizations = organizationsOf(options);
    const simulator = await startSimulator({
      host: text(options, 'host') ?? '127.0.0.1',
      port: number('port', text(options, 'port'), 0, 65535),
      seed: number('seed', text(options, 'seed'), 0, MAX_SEED),
      ...(organizations === undefined ? { token: text(options, 'token') ?? 'sim-token' } : { organizations }),
      postsPerDay: number('posts-per-day', text(options, 'postsPerDay'), 0, 1_000_000),
      generationDelayMs: number('generation-delay-ms', text(options, 'generationDelayMs'), 0, 86_400_000),
      faults: {
        latencyMs: number('latency-ms', text(options, 'latencyMs'), 0, 600_000),
        ...Object.fromEntries(
          REQUEST_FAULTS.map((fault) => [fault.share, number(fault.flag, text(options, fault.share), 0, 1)]),
        ),
        failReportShare: number('fail-report-share', text(options, 'failReportShare'), 0, 1),
      },
    });
    if (organizations === undefined) {
      io.stderr.write(
        `post-reports-etl: simulator serving ${simulator.baseUrl} (token ${simulator.token})\n`,
      );
    } else {
      for (const { token, seed } of organizations) {
        io.stderr.write(
          `post-reports-etl: simulator serving ${simulator.baseUrl} (token ${token}, seed ${seed})\n`,
        );
      }
    }
    io.stdout.write(`${JSON.stringify({ baseUrl: simulator.baseUrl })}\n`);
    const signal = io.signal;
    await new Promise<void>((resolve) => {
      if (signal.aborted) resolve();
      else signal.addEventListener('abort', () => resolve(), { once: true });
    });
    await simulator.close();
    return 0;
  } catch (error) {
    printError(io, error);
    return 2;
  }
}
