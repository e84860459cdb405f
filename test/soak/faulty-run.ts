import type pg from 'pg';
import type { RunningSimulator } from '../../src/simulator/server.js';
import { type CliResult, startCli } from '../helpers/cli.js';
import type { FaultAction, FaultPlan, TimedFault } from './fault-plan.js';

export interface FaultyRunResult {
  readonly result: CliResult;
  /** Timed actions that fired before the process ended, by action type. */
  readonly fired: readonly FaultAction['type'][];
  readonly signalled: 'SIGKILL' | 'SIGTERM' | null;
  /** Backends terminated by pg_terminate_backend. */
  readonly backendsKilled: number;
  /** Windows the run logged as committed ("windows committed" lines). */
  readonly committed: ReadonlySet<string>;
  /** True when the harness guard had to kill the process: a hang. */
  readonly hung: boolean;
}

const KILL_BACKENDS = `SELECT count(pg_terminate_backend(pid))::int AS killed FROM pg_stat_activity
  WHERE application_name = 'post-reports-etl' AND datname = current_database() AND pid <> pg_backend_pid()`;

/** The windows of every "windows committed" line in the run's JSON logs. */
export function committedWindows(stderr: string): Set<string> {
  const out = new Set<string>();
  for (const line of stderr.split('\n')) {
    if (!line.includes('"msg":"windows committed"')) continue;
    try {
      const parsed = JSON.parse(line) as { windows?: unknown };
      if (Array.isArray(parsed.windows)) for (const w of parsed.windows) out.add(String(w));
    } catch {
      // A line cut by SIGKILL: its commit is checked through the state tables anyway.
    }
  }
  return out;
}

/**
 * Runs the built CLI once with a fault plan: the knobs are set before it starts, the timed faults fire on their
 * trigger (a delay, or the n-th log line with a message), and nothing fires after the process has ended.
 */
export async function faultyRun(
  args: readonly string[],
  env: Record<string, string>,
  sim: RunningSimulator,
  admin: pg.Pool,
  plan: FaultPlan,
  guardMs: number,
): Promise<FaultyRunResult> {
  sim.setFaults(plan.initial);
  const run = startCli(args, env);
  let ended = false;
  let signalled: 'SIGKILL' | 'SIGTERM' | null = null;
  let backendsKilled = 0;
  const fired: FaultAction['type'][] = [];
  const pending: Promise<void>[] = [];
  const timers: NodeJS.Timeout[] = [];

  const fire = (fault: TimedFault): void => {
    if (ended) return;
    const { action } = fault;
    fired.push(action.type);
    switch (action.type) {
      case 'set-faults':
        sim.setFaults(action.faults);
        break;
      case 'advance-time':
        sim.advanceTime(action.ms);
        break;
      case 'creation-outage':
        sim.startCreationOutage(action.ms);
        break;
      case 'kill-db-connections':
        pending.push(
          admin.query<{ killed: number }>(KILL_BACKENDS).then(({ rows }) => {
            backendsKilled += rows[0]?.killed ?? 0;
          }),
        );
        break;
      case 'signal':
        if (signalled === null) {
          signalled = action.signal;
          run.child.kill(action.signal);
        }
        break;
    }
  };

  const byLog = plan.timed.filter((t) => 'afterLog' in t.trigger);
  const seen = new Map<string, number>();
  let buffer = '';
  run.child.stderr?.on('data', (chunk: string | Buffer) => {
    buffer += chunk.toString();
    const lines = buffer.split('\n');
    buffer = lines.pop() ?? '';
    for (const line of lines) {
      const msg = /"msg":"([^"]*)"/.exec(line)?.[1];
      if (msg === undefined) continue;
      const n = (seen.get(msg) ?? 0) + 1;
      seen.set(msg, n);
      for (const t of byLog) {
        if ('afterLog' in t.trigger && t.trigger.afterLog === msg && t.trigger.nth === n) fire(t);
      }
    }
  });
  for (const t of plan.timed) {
    if ('afterMs' in t.trigger) timers.push(setTimeout(() => fire(t), t.trigger.afterMs));
  }
  let hung = false;
  const guard = setTimeout(() => {
    hung = true;
    run.child.kill('SIGKILL');
  }, guardMs);
  const result = await run.done;
  ended = true;
  sim.endCreationOutage();
  clearTimeout(guard);
  for (const timer of timers) clearTimeout(timer);
  await Promise.allSettled(pending);
  return { result, fired, signalled, backendsKilled, committed: committedWindows(result.stderr), hung };
}
