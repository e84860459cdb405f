import { DEFAULT_FAULTS } from '../../src/simulator/faults.js';
import type { Random } from '../../src/simulator/random.js';
import type { Faults } from '../../src/simulator/server.js';
import type { Cut } from '../helpers/cutting-proxy.js';

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
  // A window group's COMMIT reaches PostgreSQL and commits, but the connection drops before its answer is relayed.
  'commit-answer-lost',
  // A commit's session cut twice in a row: before the commit (nothing committed), then after it committed.
  'commit-cut-twice',
] as const;

export type FaultKind = (typeof FAULT_KINDS)[number];

/** The cuts a cutting proxy in front of the database deals a run's commits, by kind. */
const COMMIT_CUTS: Readonly<Partial<Record<FaultKind, readonly Cut[]>>> = {
  'commit-answer-lost': ['answer'],
  'commit-cut-twice': ['statement', 'answer'],
};
const COMMIT_CUT_KINDS = Object.keys(COMMIT_CUTS) as FaultKind[];

/**
 * The kinds of a run of several processes or organizations at once: there a cut commit could be any process's, so
 * the commit cuts are planned only in runs of one process.
 */
export const SHARED_RUN_KINDS: readonly FaultKind[] = FAULT_KINDS.filter(
  (kind) => !COMMIT_CUT_KINDS.includes(kind),
);

/**
 * What shows that a planned kind struck a run: the simulator's count of what it served to that run, or for the
 * faults the harness deals itself, what it did to the run's processes or their sessions. A kind not listed is
 * shown by a count of its own name.
 */
const EVIDENCE: Readonly<Record<string, readonly string[]>> = {
  'rate-limit-burst': ['rate-limit'],
  'server-errors': ['server-error'],
  'dropped-connections': ['drop'],
  'slow-responses': ['slow'],
  'report-fails': ['fail-report'],
  'report-expires': ['report-expired'],
  'report-gone': ['report-gone'],
  'page-token-expires': ['page-token-expired'],
  'db-connection-killed': ['db-backends-killed'],
  'late-data-outage': ['late-data', 'creation-outage'],
};

export function evidenceOf(kind: string): readonly string[] {
  return EVIDENCE[kind] ?? [kind];
}

/** Kinds that end the process or its database sessions: never in a --reset run, whose reset must complete. */
const HARD_KINDS: readonly FaultKind[] = ['db-connection-killed', 'failover', 'sigkill', 'sigterm'];
/**
 * Kinds that leave each other nothing to strike, never planned together (the primary one stays): a report that
 * vanishes serves no page token to expire, and a run ended by a kill or a lost database seldom has a session idle
 * long enough to be cut before.
 */
const EXCLUSIVE: readonly (readonly [FaultKind, FaultKind])[] = [
  ['page-token-expires', 'report-gone'],
  ...HARD_KINDS.map((kind) => ['idle-cut', kind] as const),
  // A commit cut needs a live run with its commit ahead, and a reset that completes: the proxy cuts one
  // transaction (the first commit that carries the commit lock's key) a run.
  ...COMMIT_CUT_KINDS.flatMap((kind) =>
    [...HARD_KINDS, 'filter-reset' as const].map((other) => [kind, other] as const),
  ),
  ['commit-answer-lost', 'commit-cut-twice'],
];

/** Kinds the harness deals itself, not the simulator: a fault waiting for what the simulator served skips them. */
const DEALT_BY_HARNESS: ReadonlySet<FaultKind> = new Set([
  ...HARD_KINDS,
  ...COMMIT_CUT_KINDS,
  'idle-cut',
  'filter-reset',
]);

/**
 * When a timed fault fires: once the simulator has served the n-th thing of a kind since the run started (a
 * creation call answered, a page of records, or a fault kind it counts: see RunningSimulator.onServed; nth 0:
 * as the run starts), once it has served each of some kinds at least once, or at the n-th debug line carrying a
 * message. Never on a timer: what a run has been served when a fault strikes does not depend on the machine's speed.
 */
export type Trigger =
  | { readonly afterServed: string; readonly nth: number }
  | { readonly afterEvery: readonly string[] }
  | { readonly afterLog: 'report created' | 'page staged' | 'windows committed'; readonly nth: number };

export type FaultAction =
  | { readonly type: 'set-faults'; readonly faults: Partial<Faults> }
  | { readonly type: 'advance-time'; readonly ms: number }
  | { readonly type: 'creation-outage'; readonly calls: number }
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
  /**
   * Set for a commit cut: the run's database sessions go through a cutting proxy, armed before it starts to cut
   * the first commit transaction that carries the commit lock's key; the kind struck once the proxy made every cut.
   */
  readonly commitCuts: { readonly kind: FaultKind; readonly cuts: readonly Cut[] } | null;
}

/** Every knob off: what a clean run gets. */
// Retry-After 0: a clean run should not sleep on a 429 it will never get anyway.
export const NO_FAULTS: Partial<Faults> = { ...DEFAULT_FAULTS, retryAfterSeconds: 0 };

/** A moment in the run where there is still work to hit: mostly a log line of the load itself. */
function randomTrigger(random: Random): Trigger {
  if (random.chance(0.2)) {
    return random.chance(0.5)
      ? { afterServed: 'creation', nth: 1 }
      : { afterServed: 'page', nth: 1 + random.int(2) };
  }
  const at = random.int(6);
  if (at < 2) return { afterLog: 'report created', nth: 1 + at };
  if (at < 5) return { afterLog: 'page staged', nth: at - 1 };
  return { afterLog: 'windows committed', nth: 1 };
}

/**
 * A fault drawn by share may strike none of a small run's requests: the first request after the trigger (the
 * start, or the first creation call) gets it for certain, then the share applies for the rest of the run.
 */
function oneForCertain(
  random: Random,
  served: string,
  certain: Partial<Faults>,
  share: Partial<Faults>,
): TimedFault[] {
  const trigger = random.chance(0.5)
    ? { afterServed: 'creation', nth: 1 }
    : { afterServed: 'creation', nth: 0 };
  return [
    { trigger, action: { type: 'set-faults', faults: certain } },
    { trigger: { afterServed: served, nth: 1 }, action: { type: 'set-faults', faults: share } },
  ];
}

/**
 * Draws the faults of one run from `random` (so from the printed seed): `primary` always, and up to two more.
 * The soak passes each kind in turn as the primary one, so that a soak of any size plans every kind. A run of
 * several processes or organizations (`shared`) draws from SHARED_RUN_KINDS only.
 */
export function drawFaultPlan(
  random: Random,
  range: { readonly windowStarts: readonly string[]; readonly dates: readonly string[] },
  primary: FaultKind,
  options: { canReset: boolean; shared: boolean },
): FaultPlan {
  const pool = options.shared ? SHARED_RUN_KINDS : FAULT_KINDS;
  if (!pool.includes(primary))
    throw new RangeError(`${primary} is never planned in a run of several processes or organizations`);
  const kinds = new Set<FaultKind>([primary]);
  const extra = random.int(3);
  for (let i = 0; i < extra; i += 1) kinds.add(random.pick(pool));
  if (!options.canReset) kinds.delete('filter-reset');
  if (kinds.size === 0) kinds.add('slow-responses');
  if (kinds.has('filter-reset')) for (const hard of HARD_KINDS) kinds.delete(hard);
  // One fault that can end the run: a second would seldom strike a live run.
  const hard = HARD_KINDS.filter((kind) => kinds.has(kind));
  const keep = hard.includes(primary) ? primary : hard[0];
  for (const kind of hard) if (kind !== keep) kinds.delete(kind);
  for (const [one, other] of EXCLUSIVE) {
    if (kinds.has(one) && kinds.has(other)) kinds.delete(one === primary ? other : one);
  }
  const initial: Partial<Faults> = {};
  const timed: TimedFault[] = [];
  const reviseDates: string[] = [];
  let commitCuts: FaultPlan['commitCuts'] = null;
  for (const kind of kinds) {
    switch (kind) {
      case 'rate-limit-burst': {
        // A burst: 429s (Retry-After 0 or 1 s) switched on, then off again once a few were served.
        const on = random.chance(0.5)
          ? { afterServed: 'creation', nth: random.int(3) }
          : randomTrigger(random);
        const share = 0.3 + random.next() * 0.4;
        const retryAfterSeconds = random.chance(0.8) ? 0 : 1;
        timed.push({
          trigger: on,
          action: { type: 'set-faults', faults: { rateLimitShare: share, retryAfterSeconds } },
        });
        timed.push({
          trigger: { afterServed: 'rate-limit', nth: 1 + random.int(6) },
          action: { type: 'set-faults', faults: { rateLimitShare: 0 } },
        });
        break;
      }
      case 'server-errors': {
        const serverErrorShare = 0.05 + random.next() * 0.15;
        timed.push(...oneForCertain(random, 'server-error', { serverErrorShare: 1 }, { serverErrorShare }));
        break;
      }
      case 'dropped-connections': {
        const dropShare = 0.03 + random.next() * 0.1;
        timed.push(...oneForCertain(random, 'drop', { dropShare: 1 }, { dropShare }));
        break;
      }
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
        // Right after a page with a next one was served: its reader asks the expired report for that next page.
        timed.push({
          trigger: { afterServed: 'page-with-next', nth: 1 + random.int(2) },
          action: { type: 'advance-time', ms: 700_000 },
        });
        break;
      case 'report-gone':
        // A filtered run's reports may have one page each: gone at its first request, it strikes for certain.
        initial.reportGoneAfterPage = kinds.has('filter-reset') ? 0 : random.int(3);
        break;
      case 'page-token-expires':
        // The token of a report's first page: a report of two pages is enough for it to strike.
        if (random.chance(0.5)) initial.pageTokenExpiresAtPage = 2;
        else {
          // Right after a page with a next one was served, before its client asks for that: its token expires.
          initial.pageTokenTtlMs = 60_000;
          timed.push({
            trigger: { afterServed: 'page-with-next', nth: 1 + random.int(2) },
            action: { type: 'advance-time', ms: 70_000 },
          });
        }
        break;
      case 'late-data-outage': {
        const revised = 1 + random.int(3);
        for (let i = 0; i < revised; i += 1) reviseDates.push(random.pick(range.dates));
        // Creation fails from the start, or once some reports exist; short outages (a few calls) are ridden out
        // by the retries, longer ones fail windows (which must keep their previous rows).
        const calls = random.chance(0.3) ? 10 + random.int(30) : 1 + random.int(4);
        const trigger = random.chance(0.5)
          ? { afterServed: 'creation', nth: 0 }
          : { afterLog: 'report created' as const, nth: 1 };
        timed.push({ trigger, action: { type: 'creation-outage', calls } });
        break;
      }
      case 'filter-reset':
        break;
      case 'db-connection-killed':
        timed.push({ trigger: randomTrigger(random), action: { type: 'kill-db-connections' } });
        break;
      case 'idle-cut':
        timed.push({
          trigger: { afterServed: 'creation', nth: 0 },
          // 100-500 ms: a run of few windows ends within a second of its first report, and a cut it never sits
          // idle long enough for is a fault that did not strike (the same draw as before, halved).
          action: { type: 'idle-cut', idleMs: 100 + (random.int(800) >> 1) },
        });
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
      case 'commit-answer-lost':
      case 'commit-cut-twice':
        commitCuts = { kind, cuts: COMMIT_CUTS[kind] ?? [] };
        break;
    }
  }
  // A fault that ends the run strikes once the run's other faults have (otherwise an early kill leaves them
  // nothing to strike), and once a report was asked for: by then the run holds its database sessions, which a
  // 429 on its first request, before it connects, would find none of.
  const others = [
    ...[...kinds].filter((kind) => kind !== keep && !DEALT_BY_HARNESS.has(kind)).flatMap(evidenceOf),
    'creation',
  ];
  const ordered =
    keep === undefined || others.length === 1
      ? timed
      : timed.map((t) => (isHard(t.action) ? { ...t, trigger: { afterEvery: others } } : t));
  return { kinds: [...kinds], initial, timed: ordered, reviseDates, commitCuts };
}

function isHard(action: FaultAction): boolean {
  return action.type === 'signal' || action.type === 'kill-db-connections' || action.type === 'failover';
}
