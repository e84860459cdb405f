import { DEFAULT_FAULTS } from '../../src/simulator/faults.js';
import type { Random } from '../../src/simulator/random.js';
import type { Faults } from '../../src/simulator/server.js';

export const FAULT_KINDS = [
  'rate-limit-burst',
  'server-errors',
  'dropped-connections',
  'slow-responses',
  'report-fails',
  'report-expires',
  'page-token-expires',
  'db-connection-killed',
  'sigkill',
  'sigterm',
] as const;

export type FaultKind = (typeof FAULT_KINDS)[number];

/** When a timed fault fires: a delay after the start, or the n-th debug line carrying a message. */
export type Trigger =
  | { readonly afterMs: number }
  | { readonly afterLog: 'report created' | 'page staged' | 'windows committed'; readonly nth: number };

export type FaultAction =
  | { readonly type: 'set-faults'; readonly faults: Partial<Faults> }
  | { readonly type: 'advance-time'; readonly ms: number }
  | { readonly type: 'kill-db-connections' }
  | { readonly type: 'signal'; readonly signal: 'SIGKILL' | 'SIGTERM' };

export interface TimedFault {
  readonly trigger: Trigger;
  readonly action: FaultAction;
}

/** The faults of one CLI run: knobs set before it starts, and actions fired while it runs. */
export interface FaultPlan {
  readonly kinds: readonly FaultKind[];
  readonly initial: Partial<Faults>;
  readonly timed: readonly TimedFault[];
}

/** Every knob off: what a clean run gets. */
// Retry-After 0: a clean run should not sleep on a 429 it will never get anyway.
export const NO_FAULTS: Partial<Faults> = { ...DEFAULT_FAULTS, retryAfterSeconds: 0 };

function randomTrigger(random: Random): Trigger {
  if (random.chance(0.4)) return { afterMs: 50 + random.int(1000) };
  const afterLog = random.pick(['report created', 'page staged', 'windows committed'] as const);
  return { afterLog, nth: 1 + random.int(4) };
}

/** Draws one to three distinct fault kinds and how they strike, all from `random` (so from the printed seed). */
export function drawFaultPlan(random: Random, windowStarts: readonly string[]): FaultPlan {
  const count = 1 + random.int(3);
  const kinds = new Set<FaultKind>();
  while (kinds.size < count) kinds.add(random.pick(FAULT_KINDS));
  // One process-ending fault per run: the second would never fire.
  if (kinds.has('sigkill') && kinds.has('sigterm')) kinds.delete(random.chance(0.5) ? 'sigkill' : 'sigterm');
  const initial: Partial<Faults> = {};
  const timed: TimedFault[] = [];
  for (const kind of kinds) {
    switch (kind) {
      case 'rate-limit-burst': {
        // A burst: 429s (Retry-After 0 or 1 s) switched on, then off again.
        const on = randomTrigger(random);
        const share = 0.3 + random.next() * 0.4;
        const retryAfterSeconds = random.chance(0.8) ? 0 : 1;
        timed.push({
          trigger: on,
          action: { type: 'set-faults', faults: { rateLimitShare: share, retryAfterSeconds } },
        });
        const offAfter = 'afterMs' in on ? on.afterMs + 200 + random.int(800) : 400 + random.int(1500);
        timed.push({
          trigger: { afterMs: offAfter },
          action: { type: 'set-faults', faults: { rateLimitShare: 0 } },
        });
        break;
      }
      case 'server-errors':
        initial.serverErrorShare = 0.05 + random.next() * 0.15;
        break;
      case 'dropped-connections':
        initial.dropShare = 0.03 + random.next() * 0.1;
        break;
      case 'slow-responses':
        initial.latencyMs = 20 + random.int(150);
        break;
      case 'report-fails':
        if (random.chance(0.5)) initial.failReportShare = 0.2 + random.next() * 0.4;
        else initial.failReportStartDates = [random.pick(windowStarts)];
        break;
      case 'report-expires':
        initial.reportTtlMs = 600_000;
        timed.push({ trigger: randomTrigger(random), action: { type: 'advance-time', ms: 700_000 } });
        break;
      case 'page-token-expires':
        initial.pageTokenTtlMs = 60_000;
        timed.push({
          trigger: { afterLog: 'page staged', nth: 1 + random.int(3) },
          action: { type: 'advance-time', ms: 70_000 },
        });
        break;
      case 'db-connection-killed':
        timed.push({ trigger: randomTrigger(random), action: { type: 'kill-db-connections' } });
        break;
      case 'sigkill':
        timed.push({ trigger: randomTrigger(random), action: { type: 'signal', signal: 'SIGKILL' } });
        break;
      case 'sigterm':
        timed.push({ trigger: randomTrigger(random), action: { type: 'signal', signal: 'SIGTERM' } });
        break;
    }
  }
  return { kinds: [...kinds], initial, timed };
}
