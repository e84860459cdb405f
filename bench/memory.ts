/* Figure 3: peak RSS of the CLI (a child process) loading one window of a small and of a big report. */
import pg from 'pg';
import { type BenchContext, cliEnv } from './bench-context.js';
import { type Connector, runCli, startSimulatorChild } from './child.js';
import { median } from './stats.js';

const DAY = '2025-03-12';

export interface MemorySize {
  readonly posts: number;
  /** How the CLI child was run differently from the defaults ('' for not at all). */
  readonly variant: string;
  readonly peakRssMb: number;
  readonly samples: number[];
}

export interface MemoryResult {
  readonly connector: Connector;
  readonly sizes: readonly MemorySize[];
  readonly maxPeakRssMb: number;
}

interface Variant {
  readonly label: string;
  readonly flags: readonly string[];
  readonly env: Readonly<Record<string, string>>;
}

/**
 * The CLI grows V8's heap 10 % at a time by default, so the peak follows the live heap (about 30 MB,
 * node --trace-gc) plus V8's young generation, not the report. The variants: V8's own heap growth (what the
 * default costs in memory), and glibc's own number of malloc arenas (what the CLI's one saves).
 */
const VARIANTS: readonly Variant[] = [
  { label: '', flags: [], env: {} },
  { label: 'POST_REPORTS_HEAP_GROWTH_PERCENT=0', flags: [], env: { POST_REPORTS_HEAP_GROWTH_PERCENT: '0' } },
  { label: "MALLOC_ARENA_MAX=0 (glibc's own arenas)", flags: [], env: { MALLOC_ARENA_MAX: '0' } },
];

export async function benchMemory(context: BenchContext): Promise<MemoryResult> {
  const sizes = context.smoke ? [2_000, 20_000] : [50_000, 500_000];
  const out: MemorySize[] = [];
  for (const size of sizes) {
    // One simulator for the repetitions: the report is reused, only the connector's memory is measured.
    const sim = await startSimulatorChild({ postsPerDay: size });
    try {
      for (const variant of VARIANTS) {
        const samples: number[] = [];
        for (let rep = 0; rep < context.repetitions; rep++) {
          const schema = `bench_memory_${rep}`;
          try {
            const result = await runCli(
              context.connector,
              ['backfill', '--from', DAY, '--to', DAY, '--window-days', '1', '--schema', schema],
              cliEnv(context, sim.baseUrl, variant.env),
              variant.flags,
            );
            if (result.code !== 0)
              throw new Error(`backfill exited ${result.code}: ${result.stderr.slice(-2000)}`);
            if (result.summary?.posts !== size)
              throw new Error(`loaded ${String(result.summary?.posts)} posts, not ${size}`);
            samples.push(result.peakRssBytes / 2 ** 20);
            context.log(
              `memory ${size} posts ${variant.label} rep ${rep + 1}: peak RSS ${(result.peakRssBytes / 2 ** 20).toFixed(1)} MB`,
            );
          } finally {
            await context.pool.query(`DROP SCHEMA IF EXISTS ${pg.escapeIdentifier(schema)} CASCADE`);
          }
        }
        out.push({ posts: size, variant: variant.label, peakRssMb: median(samples), samples });
      }
    } finally {
      await sim.stop();
    }
  }
  return {
    connector: context.connector,
    sizes: out,
    maxPeakRssMb: Math.max(...out.filter((s) => s.variant === '').map((s) => s.peakRssMb)),
  };
}
