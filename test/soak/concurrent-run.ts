import type pg from 'pg';
import { todayUtc } from '../../src/model/dates.js';
import type { Window } from '../../src/model/window.js';
import { EXIT } from '../../src/pipeline/exit-codes.js';
import type { RunningSimulator } from '../../src/simulator/server.js';
import { type ConcurrentPlan, describeProcess, type ProcessSpec, processArgs } from './concurrent-plan.js';
import { allowedExits, exitLabel, lastError, summaryProblem } from './exits.js';
import type { FaultAction, FaultPlan } from './fault-plan.js';
import { faultyProcesses, type ProcessOutcome } from './faulty-run.js';
import { describeDuplicate, duplicateLiveWindows } from './live-requests.js';
import type { RecordingProxy } from './recording-proxy.js';

export interface ConcurrentRunInput {
  readonly sim: RunningSimulator;
  readonly admin: pg.Pool;
  readonly proxy: RecordingProxy;
  readonly faults: FaultPlan;
  readonly plan: ConcurrentPlan;
  readonly grid: readonly Window[];
  /** Flags every process shares: window size, concurrency, schema, filters. */
  readonly shared: readonly string[];
  readonly episodeFrom: string;
  readonly reload: boolean;
  /** The CLI's environment; each process gets its own proxy port as the API's base URL. */
  readonly env: Record<string, string>;
  readonly guardMs: number;
  /** The last date of an episode that ends today: a sync started on a later day would load past its grid. */
  readonly today: string | null;
}

export interface ConcurrentProcess {
  readonly spec: ProcessSpec;
  readonly args: readonly string[];
  readonly outcome: ProcessOutcome;
}

export interface ConcurrentRunOutcome {
  readonly processes: readonly ConcurrentProcess[];
  readonly fired: readonly FaultAction['type'][];
  readonly backendsKilled: number;
  /** What struck this run alone (FaultyProcessesResult.served). */
  readonly served: Readonly<Record<string, number>>;
  readonly problems: readonly string[];
  /** Windows some process logged as committed. */
  readonly committed: ReadonlySet<string>;
  /** Windows the processes' summaries counted as loaded by another process (windows.byOthers). */
  readonly byOthers: number;
  /** Windows two processes were working on at overlapping times, no session having been cut (must be 0). */
  readonly duplicates: number;
  /** The same after the database cut the sessions holding the claims (allowed: only one commits). */
  readonly duplicatesAfterCut: number;
  /** Processes that exited 4 (another run held the schema): a failure of concurrent runs. */
  readonly lockHeld: number;
  /** Report reads the proxy could not tie to a window (no creation call of the episode answered that id). */
  readonly unknownReports: number;
  /** True when the UTC date moved on since the episode began, and its syncs ran as backfills instead. */
  readonly syncsReplaced: boolean;
}

function byOthers(summary: Record<string, unknown> | undefined): number {
  const windows = summary?.windows as { byOthers?: unknown } | undefined;
  return typeof windows?.byOthers === 'number' ? windows.byOthers : 0;
}

/** What is wrong with how one process ended. */
function exitProblems(index: number, process: ConcurrentProcess, backendsKilled: number): string[] {
  const { outcome } = process;
  const { code, signal } = outcome.result;
  const who = `process ${index} (${describeProcess(process.spec)})`;
  const problems: string[] = [];
  if (outcome.hung) problems.push(`${who} was still alive after the guard (hang)`);
  problems.push(...summaryProblem(outcome.result, who));
  // A signal that lands before the CLI has installed its handlers (module loading) ends it by the signal itself.
  if (outcome.signalled !== null && signal === outcome.signalled) return problems;
  if (code === EXIT.lockHeld) {
    problems.push(
      `${who} exited 4 (lock held) in a concurrent run: runs on one schema must share it: ${lastError(outcome.result)}`,
    );
  } else if (!allowedExits(outcome.signalled, backendsKilled).has(code ?? -1)) {
    problems.push(`${who} exited ${exitLabel(code, signal)}: ${lastError(outcome.result)}`);
  }
  return problems;
}

/**
 * One soak run of 2 to 4 processes started at the same moment on the episode's schema, under the run's fault plan.
 * Judges how each ended and whether two of them worked on one window at once (from the recording proxy); the
 * tables are checked by the caller, against the ledger, as after any run.
 */
export async function concurrentRun(input: ConcurrentRunInput): Promise<ConcurrentRunOutcome> {
  // After midnight UTC a sync would load a day the episode's grid does not hold: a backfill of the range instead.
  const syncsReplaced = input.today !== null && todayUtc(new Date(input.sim.now())) !== input.today;
  const specs = input.plan.processes.map(
    (spec): ProcessSpec =>
      syncsReplaced && spec.command === 'sync'
        ? { command: 'backfill', first: 0, last: input.grid.length - 1 }
        : spec,
  );
  const commands = specs.map((spec, index) => ({
    args: processArgs(spec, input.grid, input.shared, {
      episodeFrom: input.episodeFrom,
      reload: input.reload,
    }),
    env: { ...input.env, POST_REPORTS_BASE_URL: input.proxy.baseUrl(index) },
  }));
  input.proxy.take();
  const run = await faultyProcesses(commands, input.sim, input.admin, input.faults, input.guardMs, {
    victim: input.plan.victim,
  });
  const processes = run.processes.map((outcome, index) => ({
    spec: specs[index] as ProcessSpec,
    args: commands[index]?.args ?? [],
    outcome,
  }));
  const problems = processes.flatMap((process, index) => exitProblems(index, process, run.backendsKilled));
  const { calls, unknownReports } = input.proxy.take();
  const duplicates = duplicateLiveWindows(calls);
  const origin = Math.min(...calls.map((call) => call.startMs));
  // A claim is a session lock: when the database cuts the sessions (a failover, killed backends), another process
  // may take a window before the one that held it notices its session is gone. Their work overlaps, and only one
  // commits: a commit checks its claims inside its own transaction. Overlap is a fault where no session was cut.
  const afterCut = run.backendsKilled > 0;
  if (!afterCut) problems.push(...duplicates.map((duplicate) => describeDuplicate(duplicate, origin)));
  const committed = new Set(processes.flatMap((process) => [...process.outcome.committed]));
  return {
    processes,
    fired: run.fired,
    backendsKilled: run.backendsKilled,
    served: run.served,
    problems,
    committed,
    byOthers: processes.reduce((sum, process) => sum + byOthers(process.outcome.result.summary), 0),
    duplicates: afterCut ? 0 : duplicates.length,
    duplicatesAfterCut: afterCut ? duplicates.length : 0,
    lockHeld: processes.filter((process) => process.outcome.result.code === EXIT.lockHeld).length,
    unknownReports,
    syncsReplaced,
  };
}

/** `backfill 0..3 exit 0, sync exit SIGKILL (SIGKILL sent)`, for the run's line. */
export function describeProcesses(processes: readonly ConcurrentProcess[]): string {
  return processes
    .map(({ spec, outcome }) => {
      const { code, signal } = outcome.result;
      const sent = outcome.signalled === null ? '' : ` (${outcome.signalled} sent)`;
      return `${describeProcess(spec)} exit ${exitLabel(code, signal)}${sent}`;
    })
    .join(', ');
}
