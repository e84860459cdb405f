import type { Window } from '../../src/model/window.js';
import type { Random } from '../../src/simulator/random.js';

/**
 * How the processes of one concurrent run relate: the same command (a duplicate trigger), ranges sharing a
 * window, ranges that split the history between them, or a sync alongside backfills.
 */
export const CONCURRENT_SHAPES = ['identical', 'overlapping', 'disjoint', 'sync'] as const;

export type ConcurrentShape = (typeof CONCURRENT_SHAPES)[number];

/** One process of a concurrent run: a command over the grid windows `first..last` (indexes, inclusive). */
export interface ProcessSpec {
  readonly command: 'backfill' | 'sync';
  /** For a sync, the range it is started on (--start-date is the episode's first date; it loads up to today). */
  readonly first: number;
  readonly last: number;
}

export interface ConcurrentPlan {
  readonly shape: ConcurrentShape;
  readonly processes: readonly ProcessSpec[];
  /** The process a kill on a timer hits (a kill on a log line hits the process that printed it). */
  readonly victim: number;
}

const MIN_PROCESSES = 2;
const MAX_PROCESSES = 4;

/** Grid-aligned sub-ranges that all contain one window: every pair overlaps. */
function overlapping(random: Random, count: number, windows: number): ProcessSpec[] {
  const pivot = random.int(windows);
  return Array.from({ length: count }, () => ({
    command: 'backfill' as const,
    first: random.int(pivot + 1),
    last: pivot + random.int(windows - pivot),
  }));
}

/** The grid cut into contiguous pieces, one a process: no two share a window. */
function disjoint(random: Random, count: number, windows: number): ProcessSpec[] {
  const pieces = Math.min(count, windows);
  const cuts = new Set<number>();
  while (cuts.size < pieces - 1) cuts.add(1 + random.int(windows - 1));
  const bounds = [0, ...[...cuts].sort((a, b) => a - b), windows];
  return bounds
    .slice(1)
    .map((end, i) => ({ command: 'backfill' as const, first: bounds[i] ?? 0, last: end - 1 }));
}

/** A sync (two now and then: a duplicate cron trigger) alongside backfills of the whole range or a part. */
function withSync(random: Random, count: number, windows: number): ProcessSpec[] {
  const whole = { first: 0, last: windows - 1 };
  const processes: ProcessSpec[] = [{ command: 'sync', ...whole }];
  if (random.chance(0.3)) processes.push({ command: 'sync', ...whole });
  while (processes.length < count) {
    if (random.chance(0.5)) processes.push({ command: 'backfill', ...whole });
    else {
      const first = random.int(windows);
      processes.push({ command: 'backfill', first, last: first + random.int(windows - first) });
    }
  }
  return processes;
}

/**
 * Draws the processes of one concurrent run from `random` (so from the printed seed): 2 to 4 of them, over whole
 * windows of the episode's grid (`windows` of them), so that every process cuts the same windows and the ledger's
 * grid holds. Disjoint ranges need two windows, and are fewer processes when the grid has fewer windows than
 * drawn; a sync needs an episode that ends today (`canSync`).
 */
export function drawConcurrentPlan(
  random: Random,
  windows: number,
  options: { readonly canSync: boolean },
): ConcurrentPlan {
  if (windows < 1) throw new RangeError(`a concurrent run needs at least one window, got ${windows}`);
  const count = MIN_PROCESSES + random.int(MAX_PROCESSES - MIN_PROCESSES + 1);
  const shapes = CONCURRENT_SHAPES.filter(
    (shape) => (shape !== 'disjoint' || windows >= 2) && (shape !== 'sync' || options.canSync),
  );
  const shape = random.pick(shapes);
  let processes: ProcessSpec[];
  switch (shape) {
    case 'identical':
      processes = Array.from({ length: count }, () => ({ command: 'backfill', first: 0, last: windows - 1 }));
      break;
    case 'overlapping':
      processes = overlapping(random, count, windows);
      break;
    case 'disjoint':
      processes = disjoint(random, count, windows);
      break;
    case 'sync':
      processes = withSync(random, count, windows);
      break;
  }
  return { shape, processes, victim: random.int(processes.length) };
}

/** The command line of one process: `base` holds the flags every process shares (schema, window size...). */
export function processArgs(
  spec: ProcessSpec,
  grid: readonly Window[],
  base: readonly string[],
  options: { readonly episodeFrom: string; readonly reload: boolean },
): string[] {
  if (spec.command === 'sync') return ['sync', '--start-date', options.episodeFrom, ...base];
  const from = grid[spec.first]?.start;
  const to = grid[spec.last]?.end;
  if (from === undefined || to === undefined) {
    throw new RangeError(`windows ${spec.first}..${spec.last} are not in a grid of ${grid.length}`);
  }
  return ['backfill', '--from', from, '--to', to, ...base, ...(options.reload ? ['--reload'] : [])];
}

/** Short, for the run's line: `backfill 0..3`, `sync`. */
export function describeProcess(spec: ProcessSpec): string {
  return spec.command === 'sync' ? 'sync' : `backfill ${spec.first}..${spec.last}`;
}
