import { ConfigError } from '../errors.js';
import { REQUEST_FAULTS } from '../simulator/faults.js';
import { startSimulator } from '../simulator/server.js';
import { type Io, printError } from './run-output.js';

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

/** `simulator`: serves the v4 simulator until SIGINT/SIGTERM. */
export async function simulatorCommand(io: Io, options: Record<string, string>): Promise<number> {
  try {
    const simulator = await startSimulator({
      host: options.host ?? '127.0.0.1',
      port: number('port', options.port, 0, 65535),
      seed: number('seed', options.seed, 0, 2 ** 31),
      token: options.token ?? 'sim-token',
      postsPerDay: number('posts-per-day', options.postsPerDay, 0, 1_000_000),
      generationDelayMs: number('generation-delay-ms', options.generationDelayMs, 0, 86_400_000),
      faults: {
        latencyMs: number('latency-ms', options.latencyMs, 0, 600_000),
        ...Object.fromEntries(
          REQUEST_FAULTS.map((fault) => [fault.share, number(fault.flag, options[fault.share], 0, 1)]),
        ),
        failReportShare: number('fail-report-share', options.failReportShare, 0, 1),
      },
    });
    io.stderr.write(`post-reports-etl: simulator serving ${simulator.baseUrl} (token ${simulator.token})\n`);
    io.stdout.write(`${JSON.stringify({ baseUrl: simulator.baseUrl })}\n`);
    const signal = io.signal;
    await new Promise<void>((resolve) => signal.addEventListener('abort', () => resolve(), { once: true }));
    await simulator.close();
    return 0;
  } catch (error) {
    printError(io, error);
    return 2;
  }
}
