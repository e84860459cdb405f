/*
 * The service an episode's simulator plays, drawn from its seed: every unkind shape (service-shapes.ts) is on in
 * some episodes and off in others, with the report ids' kind, several values of a segment dimension and the reuse
 * period. The reuse period is never longer than the connector's setting (3 h): a longer one cannot be loaded
 * exactly (README, Data age), and test/e2e/operations/reuse-period.test.ts shows its documented outcome.
 */
import { mixSeed, Random } from '../../src/simulator/random.js';
import type { RetryAfterForm, ServiceShapes, SimulatorOptions } from '../../src/simulator/server.js';

const HOUR_MS = 3_600_000;
const FORMS: readonly RetryAfterForm[] = ['seconds', 'date', 'absent'];
const BODIES = ['object', 'text', 'array', 'empty'] as const;

/** A non-empty subset of `items`, drawn. */
function subset<T>(random: Random, items: readonly T[]): T[] {
  const chosen = items.filter(() => random.chance(0.5));
  return chosen.length > 0 ? chosen : [random.pick(items)];
}

export interface ServiceDraw {
  readonly options: Pick<SimulatorOptions, 'shapes' | 'reportIds' | 'variedSegments' | 'reportReuseMs'>;
  /** For the episode's label: what the service was, to replay it. */
  readonly label: string;
}

/** The service of the simulator of seed `simSeed` (its own draws: the episode's others do not move). */
export function drawService(simSeed: number): ServiceDraw {
  const random = new Random(mixSeed(simSeed, 0x5e41));
  const shapes: ServiceShapes = {
    bearerScheme: random.chance(0.8) ? 'strict' : 'lenient',
    retryAfterForms: subset(random, FORMS),
    errorBodyShapes: subset(random, BODIES),
    inFlightLimit: random.pick([2, 3, 4, 8, null]),
    pageFill: random.chance(0.75) ? 'ragged' : 'full',
    rereadOrder: random.chance(0.75) ? 'shuffled' : 'same',
    firstOrder: random.chance(0.5) ? 'shuffled' : 'by-date',
    reuseSlides: random.chance(0.3),
  };
  const reportIds = random.chance(0.5) ? 'numeric' : 'guid';
  const variedSegments = random.chance(0.5);
  const reportReuseMs = random.pick([HOUR_MS, 2 * HOUR_MS, 3 * HOUR_MS]);
  const label = [
    shapes.bearerScheme,
    `retry-after ${shapes.retryAfterForms.join('/')}`,
    `errors ${shapes.errorBodyShapes.join('/')}`,
    `in flight ≤ ${shapes.inFlightLimit ?? '∞'}`,
    `${shapes.pageFill} pages`,
    `first reading ${shapes.firstOrder}, reread ${shapes.rereadOrder}`,
    `reuse ${reportReuseMs / HOUR_MS} h${shapes.reuseSlides ? ' sliding' : ''}`,
    `${reportIds} ids`,
    variedSegments ? 'varied segments' : 'one segment value each',
  ].join(', ');
  return { options: { shapes, reportIds, variedSegments, reportReuseMs }, label };
}
