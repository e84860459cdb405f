/* Figure 3: peak RSS of the CLI (a child process) loading one window of a small and of a big report. */
import pg from 'pg';
import { type BenchContext, cliEnv } from './bench-context.js';
import { CLI, runNode, startSimulatorChild } from './child.js';
import { median } from './stats.js';

const DAY = '2025-03-12';

export interface MemoryResult {
  readonly sizes: readonly { posts: number; peakRssMb: number; samples: number[] }[];
  readonly maxPeakRssMb: number;
}

export async function benchMemory(context: BenchContext): Promise<MemoryResult> {
  const sizes = context.smoke ? [2_000, 20_000] : [50_000, 500_000];
  const out: { posts: number; peakRssMb: number; samples: number[] }[] = [];
  for (const size of sizes) {
    // One simulator for the repetitions: the report is reused, only the connector's memory is measured.
    const sim = await startSimulatorChild({ postsPerDay: size });
    const samples: number[] = [];
    try {
      for (let rep = 0; rep < context.repetitions; rep++) {
        const schema = `bench_memory_${rep}`;
        try {
          const result = await runNode(
            [CLI, 'backfill', '--from', DAY, '--to', DAY, '--window-days', '1', '--schema', schema],
            cliEnv(context, sim.baseUrl),
          );
          if (result.code !== 0)
            throw new Error(`backfill exited ${result.code}: ${result.stderr.slice(-2000)}`);
          if (result.summary?.posts !== size)
            throw new Error(`loaded ${String(result.summary?.posts)} posts, not ${size}`);
          samples.push(result.peakRssBytes / 2 ** 20);
          context.log(
            `memory ${size} posts rep ${rep + 1}: peak RSS ${(result.peakRssBytes / 2 ** 20).toFixed(1)} MB`,
          );
        } finally {
          await context.pool.query(`DROP SCHEMA IF EXISTS ${pg.escapeIdentifier(schema)} CASCADE`);
        }
      }
    } finally {
      await sim.stop();
    }
    out.push({ posts: size, peakRssMb: median(samples), samples });
  }
  return { sizes: out, maxPeakRssMb: Math.max(...out.map((s) => s.peakRssMb)) };
}
