/*
 * The start of a run: the CPU time (user + system, the whole process, its restart in place included) of a backfill
 * whose one window is already loaded, so that it does what every run does before its first window (Node's start,
 * the CLI's modules, configuration, the database's session and migrations check, the claims) and little else: what
 * an orchestrator that starts many processes pays for each. Each connector loads the window once, then every
 * connector runs in turn, rotated, so that a drift in whatever else runs falls on each alike.
 */
import pg from 'pg';
import { type BenchContext, cliEnv } from './bench-context.js';
import { type Connector, runCli, startReplayChild } from './child.js';
import { median } from './stats.js';

const DAY = '2025-03-12';

export interface StartResult {
  readonly connector: Connector;
  readonly runs: number;
  /** Median CPU time of a run, in ms. */
  readonly cpuMs: number;
  /** Median wall time of a run, in ms. */
  readonly wallMs: number;
  readonly samples: { readonly cpuMs: readonly number[]; readonly wallMs: readonly number[] };
}

export async function benchStart(context: BenchContext): Promise<StartResult[]> {
  const server = await startReplayChild(10);
  const runs = context.smoke ? 2 : 15;
  const schema = (i: number) => `bench_start_${i}`;
  try {
    const run = async (connector: Connector, i: number) => {
      const result = await runCli(
        connector,
        ['backfill', '--from', DAY, '--to', DAY, '--window-days', '1', '--schema', schema(i)],
        cliEnv(context, server.baseUrl),
      );
      if (result.code !== 0)
        throw new Error(`start run exited ${result.code}: ${result.stderr.slice(-2000)}`);
      return result;
    };
    for (const [i, connector] of context.connectors.entries()) await run(connector, i);
    const samples = context.connectors.map(() => ({ cpuMs: [] as number[], wallMs: [] as number[] }));
    for (let r = 0; r < runs; r++) {
      for (let k = 0; k < context.connectors.length; k++) {
        const i = (k + r) % context.connectors.length;
        const result = await run(context.connectors[i]!, i);
        if (result.cpuMs === null) throw new Error('a start run did not report its CPU time');
        samples[i]!.cpuMs.push(result.cpuMs);
        samples[i]!.wallMs.push(result.wallMs);
      }
    }
    context.log(`start: ${runs} runs of each connector`);
    return context.connectors.map((connector, i) => ({
      connector,
      runs,
      cpuMs: median(samples[i]!.cpuMs),
      wallMs: median(samples[i]!.wallMs),
      samples: samples[i]!,
    }));
  } finally {
    await server.stop();
    for (let i = 0; i < context.connectors.length; i++) {
      await context.pool.query(`DROP SCHEMA IF EXISTS ${pg.escapeIdentifier(schema(i))} CASCADE`);
    }
  }
}
