import { setTimeout as sleep } from 'node:timers/promises';
import pg from 'pg';
import type { RunningSimulator } from '../../src/simulator/server.js';
import { type CliResult, type CliRun, startCli } from '../helpers/cli.js';
import { type CuttingProxy, startCuttingProxy } from '../helpers/cutting-proxy.js';
import type { FaultAction, FaultPlan, TimedFault } from './fault-plan.js';

type Signal = 'SIGKILL' | 'SIGTERM';

export interface FaultyRunResult {
  readonly result: CliResult;
  /** Timed actions that fired before the process ended, by action type. */
  readonly fired: readonly FaultAction['type'][];
  readonly signalled: Signal | null;
  /** Backends terminated by pg_terminate_backend. */
  readonly backendsKilled: number;
  /** What struck this run alone: see FaultyProcessesResult.served. */
  readonly served: Readonly<Record<string, number>>;
  /** Windows the run logged as committed ("windows committed" lines). */
  readonly committed: ReadonlySet<string>;
  /** True when the harness guard had to kill the process: a hang. */
  readonly hung: boolean;
}

/** One process of a run started at once with others (see faultyProcesses). */
export interface ProcessOutcome {
  readonly result: CliResult;
  /** The signal the harness sent this process, if it was the one a kill hit. */
  readonly signalled: Signal | null;
  readonly committed: ReadonlySet<string>;
  readonly hung: boolean;
}

export interface FaultyProcessesResult {
  readonly processes: readonly ProcessOutcome[];
  /** Timed actions that fired while a process was alive, by action type. */
  readonly fired: readonly FaultAction['type'][];
  /** Backends terminated by pg_terminate_backend (every process's). */
  readonly backendsKilled: number;
  /**
   * What struck this run, and only it: the faults the simulator served while its processes were alive (its
   * stats().faults before and after), and what the harness did to them (`sigkill`, `sigterm`,
   * `db-backends-killed`).
   */
  readonly served: Readonly<Record<string, number>>;
}

export interface FaultyProcessesOptions {
  /** The process a kill triggered by what the simulator served hits (default the first). */
  readonly victim?: number;
  /** What the commit transactions' messages carry (the commit lock's key): needed by a plan's commit cuts. */
  readonly commitMarker?: string;
}

/** A process to start: its arguments and its environment. */
export interface ProcessCommand {
  readonly args: readonly string[];
  readonly env: Record<string, string>;
}

/** Terminates the connector's sessions on database $1 (the soak's own carry another application name). */
const KILL_BACKENDS = `SELECT count(pg_terminate_backend(pid))::int AS killed FROM pg_stat_activity
  WHERE application_name LIKE 'post-reports-etl run %' AND datname = $1`;

/** The database of `admin`, and a connection string to its server's maintenance database. */
function databaseOf(admin: pg.Pool): { name: string; serverUrl: string } {
  const url = new URL(admin.options.connectionString ?? '');
  const name = decodeURIComponent(url.pathname.slice(1));
  url.pathname = '/postgres';
  return { name, serverUrl: url.toString() };
}

/**
 * Idle sessions of the database are cut after `idleMs` from now on (until `end`), as a managed service or a
 * proxy cuts them. A probe session of the harness, left idle, tells whether the server did cut one.
 */
async function startIdleCut(
  admin: pg.Pool,
  idleMs: number,
): Promise<{ cut: () => boolean; end: () => Promise<void> }> {
  const { name } = databaseOf(admin);
  await admin.query(`ALTER DATABASE ${pg.escapeIdentifier(name)} SET idle_session_timeout = ${idleMs}`);
  let cut = false;
  const probe = new pg.Client({ connectionString: admin.options.connectionString });
  probe.on('error', (error: Error & { code?: string }) => {
    if (error.code === '57P05') cut = true;
  });
  await probe.connect().catch(() => {});
  return {
    cut: () => cut,
    async end() {
      await admin.query(`ALTER DATABASE ${pg.escapeIdentifier(name)} RESET idle_session_timeout`);
      await probe.end().catch(() => {});
    },
  };
}

/**
 * What a failover does to the connector: every session it holds is terminated, and the database takes no new
 * session for `downMs`. Returns the backends terminated.
 */
async function failover(admin: pg.Pool, downMs: number): Promise<number> {
  const { name, serverUrl } = databaseOf(admin);
  const server = new pg.Client({ connectionString: serverUrl });
  server.on('error', () => {});
  await server.connect();
  try {
    await server.query(`ALTER DATABASE ${pg.escapeIdentifier(name)} ALLOW_CONNECTIONS false`);
    try {
      // From the maintenance database: the soak's own pool may need a new session, which is refused now.
      const { rows } = await server.query<{ killed: number }>(KILL_BACKENDS, [name]);
      await sleep(downMs);
      return rows[0]?.killed ?? 0;
    } finally {
      await server.query(`ALTER DATABASE ${pg.escapeIdentifier(name)} ALLOW_CONNECTIONS true`);
    }
  } finally {
    await server.end().catch(() => {});
  }
}

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

/** Calls `onMessage` with the msg of each JSON log line of `run`'s stderr, as it comes. */
function onLogMessages(run: CliRun, onMessage: (msg: string) => void): void {
  let buffer = '';
  run.child.stderr?.on('data', (chunk: string | Buffer) => {
    buffer += chunk.toString();
    const lines = buffer.split('\n');
    buffer = lines.pop() ?? '';
    for (const line of lines) {
      const msg = /"msg":"([^"]*)"/.exec(line)?.[1];
      if (msg !== undefined) onMessage(msg);
    }
  });
}

/**
 * Runs the built CLI once per command, all started at the same moment, with one fault plan: the knobs are set
 * before they start, and the timed faults fire on their trigger (the n-th thing of a kind the simulator served,
 * or the n-th log line with a message, counted over every process's log), never once every process has ended.
 * API faults strike whoever asks; a database kill strikes every process's backends; a signal strikes one
 * process: on a log line, the one that printed it (at work, then), otherwise the victim (or, once it has ended,
 * the first process still alive).
 */
export async function faultyProcesses(
  commands: readonly ProcessCommand[],
  sim: RunningSimulator,
  admin: pg.Pool,
  plan: FaultPlan,
  guardMs: number,
  options: FaultyProcessesOptions = {},
): Promise<FaultyProcessesResult> {
  const victim = options.victim ?? 0;
  const dealt: Record<string, number> = {};
  const cutting =
    plan.commitCuts === null ? null : await armCommitCuts(commands, plan.commitCuts, options, dealt);
  try {
    return await faultyProcessesOn(cutting?.commands ?? commands, sim, admin, plan, guardMs, victim, dealt);
  } finally {
    cutting?.proxy.close();
  }
}

/**
 * A cutting proxy in front of the one process's database, armed before it starts: the commit cuts struck (in
 * `dealt`, under the kind's name) once the proxy made every cut.
 */
async function armCommitCuts(
  commands: readonly ProcessCommand[],
  commitCuts: NonNullable<FaultPlan['commitCuts']>,
  options: FaultyProcessesOptions,
  dealt: Record<string, number>,
): Promise<{ proxy: CuttingProxy; commands: ProcessCommand[] }> {
  const [command, ...others] = commands;
  const databaseUrl = command?.env.DATABASE_URL;
  if (
    command === undefined ||
    others.length > 0 ||
    databaseUrl === undefined ||
    options.commitMarker === undefined
  ) {
    throw new RangeError(`${commitCuts.kind} needs one process, its DATABASE_URL and the commit marker`);
  }
  const server = new URL(databaseUrl);
  const proxy = await startCuttingProxy({ host: server.hostname, port: Number(server.port || 5432) });
  void proxy.cutTransactions(options.commitMarker, commitCuts.cuts).then(() => {
    dealt[commitCuts.kind] = (dealt[commitCuts.kind] ?? 0) + 1;
  });
  return {
    proxy,
    commands: [{ args: command.args, env: { ...command.env, DATABASE_URL: proxy.urlThrough(databaseUrl) } }],
  };
}

async function faultyProcessesOn(
  commands: readonly ProcessCommand[],
  sim: RunningSimulator,
  admin: pg.Pool,
  plan: FaultPlan,
  guardMs: number,
  victim: number,
  dealt: Record<string, number>,
): Promise<FaultyProcessesResult> {
  const before = sim.stats().faults;
  sim.setFaults(plan.initial);
  const runs = commands.map((command) => startCli(command.args, command.env));
  const ended = runs.map(() => false);
  const signalled: (Signal | null)[] = runs.map(() => null);
  const hung = runs.map(() => false);
  let signalSent = false;
  let backendsKilled = 0;
  const idleCuts: Promise<{ cut: () => boolean; end: () => Promise<void> }>[] = [];
  const fired: FaultAction['type'][] = [];
  const pending: Promise<void>[] = [];

  const fire = (fault: TimedFault, by: number | null): void => {
    if (ended.every(Boolean)) return;
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
        sim.startCreationOutage({ calls: action.calls });
        break;
      case 'kill-db-connections':
        pending.push(
          admin.query<{ killed: number }>(KILL_BACKENDS, [databaseOf(admin).name]).then(({ rows }) => {
            backendsKilled += rows[0]?.killed ?? 0;
          }),
        );
        break;
      case 'idle-cut':
        idleCuts.push(startIdleCut(admin, action.idleMs));
        break;
      case 'failover':
        pending.push(
          failover(admin, action.downMs).then((killed) => {
            backendsKilled += killed;
            if (killed > 0) dealt.failover = (dealt.failover ?? 0) + 1;
          }),
        );
        break;
      case 'signal': {
        const target = by ?? (ended[victim] === false ? victim : ended.indexOf(false));
        if (!signalSent && target >= 0) {
          signalSent = true;
          signalled[target] = action.signal;
          runs[target]?.child.kill(action.signal);
        }
        break;
      }
    }
  };

  const byLog = plan.timed.filter((t) => 'afterLog' in t.trigger);
  const seen = new Map<string, number>();
  for (const [index, run] of runs.entries()) {
    onLogMessages(run, (msg) => {
      const n = (seen.get(msg) ?? 0) + 1;
      seen.set(msg, n);
      for (const t of byLog) {
        if ('afterLog' in t.trigger && t.trigger.afterLog === msg && t.trigger.nth === n) fire(t, index);
      }
    });
  }
  const byServed = plan.timed.filter((t) => 'afterServed' in t.trigger);
  for (const t of byServed) if ('afterServed' in t.trigger && t.trigger.nth === 0) fire(t, null);
  const served = new Map<string, number>();
  const byEvery = plan.timed.filter((t) => 'afterEvery' in t.trigger);
  const stopListening = sim.onServed((kind) => {
    const n = (served.get(kind) ?? 0) + 1;
    served.set(kind, n);
    for (const t of byServed) {
      if ('afterServed' in t.trigger && t.trigger.afterServed === kind && t.trigger.nth === n) fire(t, null);
    }
    for (const t of byEvery) {
      const every = 'afterEvery' in t.trigger ? t.trigger.afterEvery : [];
      if (every.includes(kind) && n === 1 && every.every((k) => served.has(k))) fire(t, null);
    }
  });
  const results = await Promise.all(
    runs.map(async (run, index) => {
      const guard = setTimeout(() => {
        hung[index] = true;
        run.child.kill('SIGKILL');
      }, guardMs);
      const result = await run.done;
      ended[index] = true;
      clearTimeout(guard);
      return result;
    }),
  );
  stopListening();
  sim.endCreationOutage();
  await Promise.allSettled(pending);
  for (const settled of await Promise.allSettled(idleCuts)) {
    if (settled.status !== 'fulfilled') continue;
    if (settled.value.cut()) dealt['idle-cut'] = (dealt['idle-cut'] ?? 0) + 1;
    await settled.value.end();
  }
  const processes = results.map((result, index) => ({
    result,
    signalled: signalled[index] ?? null,
    committed: committedWindows(result.stderr),
    hung: hung[index] ?? false,
  }));
  return {
    processes,
    fired,
    backendsKilled,
    served: servedSince(before, sim.stats().faults, signalled, backendsKilled, dealt),
  };
}

/**
 * The simulator's fault counts of one run (after minus before), with what the harness did to its processes and
 * dealt its database (`idle-cut`, `failover`, the commit cuts by their kind).
 */
function servedSince(
  before: Readonly<Record<string, number>>,
  after: Readonly<Record<string, number>>,
  signalled: readonly (Signal | null)[],
  backendsKilled: number,
  dealt: Readonly<Record<string, number>>,
): Record<string, number> {
  const counts: Record<string, number> = { ...dealt };
  for (const [kind, n] of Object.entries(after)) {
    const delta = n - (before[kind] ?? 0);
    if (delta > 0) counts[kind] = delta;
  }
  for (const signal of signalled) {
    if (signal !== null) counts[signal.toLowerCase()] = (counts[signal.toLowerCase()] ?? 0) + 1;
  }
  if (backendsKilled > 0) counts['db-backends-killed'] = backendsKilled;
  return counts;
}

/** Runs the built CLI once with a fault plan (faultyProcesses with one process). */
export async function faultyRun(
  args: readonly string[],
  env: Record<string, string>,
  sim: RunningSimulator,
  admin: pg.Pool,
  plan: FaultPlan,
  guardMs: number,
  options: FaultyProcessesOptions = {},
): Promise<FaultyRunResult> {
  const { processes, fired, backendsKilled, served } = await faultyProcesses(
    [{ args, env }],
    sim,
    admin,
    plan,
    guardMs,
    options,
  );
  const [only] = processes;
  if (only === undefined) throw new Error('faultyProcesses returned no process');
  return { ...only, fired, backendsKilled, served };
}
