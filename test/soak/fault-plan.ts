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
  'report-gone',
  'page-token-expires',
  'db-connection-killed',
  'sigkill',
  'sigterm',
  // Late data (figures revised, the reuse period over) and report creation failing while the run reloads.
  'late-data-outage',
  // The filters change, and the run starts over with --reset.
  'filter-reset',
  // The server closes sessions idle for a moment (idle_session_timeout on the database).
  'idle-cut',
  // Every session of the connector terminated, and the database closed to new ones for a moment.
  'failover',
] as const;

export type FaultKind = (typeof FAULT_KINDS)[number];

/** Kinds that end the process or its database sessions: never in a --reset run, whose reset must complete. */
const HARD_KINDS: readonly FaultKind[] = ['db-connection-killed', 'failover', 'sigkill', 'sigterm'];

/** When a timed fault fires: a delay after the start, or the n-th debug line carrying a message. */
export type Trigger =
  | { readonly afterMs: number }
  | { readonly afterLog: 'report created' | 'page staged' | 'windows committed'; readonly nth: number };

export type FaultAction =
  | { readonly type: 'set-faults'; readonly faults: Partial<Faults> }
  | { readonly type: 'advance-time'; readonly ms: number }
  | { readonly type: 'creation-outage'; readonly ms: number }
  | { readonly type: 'kill-db-connections' }
  | { readonly type: 'idle-cut'; readonly idleMs: number }
  | { readonly type: 'failover'; readonly downMs: number }
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
  /** Dates whose figures are revised before the run (late data); the episode then moves past the reuse period. */
  readonly reviseDates: readonly string[];
}

/** Every knob off: what a clean run gets. */
// Retry-After 0: a clean run should not sleep on a 429 it will never get anyway.
export const NO_FAULTS: Partial<Faults> = { ...DEFAULT_FAULTS, retryAfterSeconds: 0 };

/** A moment in the run where there is still work to hit: mostly a log line of the load itself. */
function randomTrigger(random: Random): Trigger {
  if (random.chance(0.2)) return { afterMs: 50 + random.int(600) };
  const at = random.int(6);
  if (at < 2) return { afterLog: 'report created', nth: 1 + at };
  if (at < 5) return { afterLog: 'page staged', nth: at - 1 };
  return { afterLog: 'windows committed', nth: 1 };
}

/**
 * Draws the faults of one run from `random` (so from the printed seed): `primary` always, and up to two more.
 * The soak passes each kind in turn as the primary one, so that a soak of any size plans every kind.
 */
export function drawFaultPlan(
  random: Random,
  range: { readonly windowStarts: readonly string[]; readonly dates: readonly string[] },
  primary: FaultKind,
  options: { canReset: boolean },
): FaultPlan {
  const kinds = new Set<FaultKind>([primary]);
  const extra = random.int(3);
  for (let i = 0; i < extra; i += 1) kinds.add(random.pick(FAULT_KINDS));
  if (!options.canReset) kinds.delete('filter-reset');
  if (kinds.size === 0) kinds.add('slow-responses');
  if (kinds.has('filter-reset')) for (const hard of HARD_KINDS) kinds.delete(hard);
  // One fault that can end the run: a second would seldom strike a live run.
  const hard = HARD_KINDS.filter((kind) => kinds.has(kind));
  const keep = hard.includes(primary) ? primary : hard[0];
  for (const kind of hard) if (kind !== keep) kinds.delete(kind);
  const initial: Partial<Faults> = {};
  const timed: TimedFault[] = [];
  const reviseDates: string[] = [];
  for (const kind of kinds) {
    switch (kind) {
      case 'rate-limit-burst': {
        // A burst: 429s (Retry-After 0 or 1 s) switched on, then off again.
        const on = random.chance(0.5) ? { afterMs: random.int(300) } : randomTrigger(random);
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
        // One window's new report fails for certain (a share alone may fail none of a few windows), and
        // sometimes a share of the others too.
        initial.failReportStartDates = [random.pick(range.windowStarts)];
        if (random.chance(0.5)) initial.failReportShare = 0.2 + random.next() * 0.4;
        break;
      case 'report-expires':
        initial.reportTtlMs = 600_000;
        timed.push({
          trigger: {
            afterLog: random.pick(['report created', 'page staged'] as const),
            nth: 1 + random.int(2),
          },
          action: { type: 'advance-time', ms: 700_000 },
        });
        break;
      case 'report-gone':
        initial.reportGoneAfterPage = 1 + random.int(2);
        break;
      case 'page-token-expires':
        if (random.chance(0.5)) initial.pageTokenExpiresAtPage = 2 + random.int(2);
        else {
          initial.pageTokenTtlMs = 60_000;
          timed.push({
            trigger: { afterLog: 'page staged', nth: 1 + random.int(2) },
            action: { type: 'advance-time', ms: 70_000 },
          });
        }
        break;
      case 'late-data-outage': {
        const revised = 1 + random.int(3);
        for (let i = 0; i < revised; i += 1) reviseDates.push(random.pick(range.dates));
        // Creation fails from the start, or once some reports exist; short outages are ridden out by the
        // retries, longer ones fail windows (which must keep their previous rows).
        const ms = 200 + random.int(random.chance(0.3) ? 8000 : 2500);
        const trigger = random.chance(0.5) ? { afterMs: 0 } : { afterLog: 'report created' as const, nth: 1 };
        timed.push({ trigger, action: { type: 'creation-outage', ms } });
        break;
      }
      case 'filter-reset':
        break;
      case 'db-connection-killed':
        timed.push({ trigger: randomTrigger(random), action: { type: 'kill-db-connections' } });
        break;
      case 'idle-cut':
        timed.push({ trigger: { afterMs: 0 }, action: { type: 'idle-cut', idleMs: 200 + random.int(800) } });
        break;
      case 'failover':
        timed.push({
          trigger: randomTrigger(random),
          action: { type: 'failover', downMs: 200 + random.int(2000) },
        });
        break;
      case 'sigkill':
        timed.push({ trigger: randomTrigger(random), action: { type: 'signal', signal: 'SIGKILL' } });
        break;
      case 'sigterm':
        timed.push({ trigger: randomTrigger(random), action: { type: 'signal', signal: 'SIGTERM' } });
        break;
    }
  }
  return { kinds: [...kinds], initial, timed, reviseDates };
}
