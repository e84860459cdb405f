import type { ChildProcess } from 'node:child_process';
import { chmod, mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, afterEach, beforeAll, describe, expect, it, onTestFinished } from 'vitest';
import { parse as parseYaml } from 'yaml';
import { addDays } from '../../../src/model/dates.js';
import { EXIT } from '../../../src/pipeline/exit-codes.js';
import type { RunSummary } from '../../../src/pipeline/run-summary.js';
import { cutWindows } from '../../../src/pipeline/windows.js';
import { type RunningSimulator, startSimulator } from '../../../src/simulator/server.js';
import { CLI, type CliResult, runCli, runProgram } from '../../helpers/cli.js';
import { createTestDatabase } from '../../helpers/database.js';
import { cliEnv } from '../../helpers/e2e-env.js';
import { needPython } from '../../helpers/python.js';
import { compareWithReference, snapshotSchema } from '../../helpers/reference-check.js';
import { summaryOf } from '../../helpers/summary.js';
import { TODAY } from '../../helpers/today.js';

const ROOT = fileURLToPath(new URL('../../..', import.meta.url));
const AIRFLOW = join(ROOT, 'recipes', 'airflow', 'post_reports_dag.py');
const DAGSTER = join(ROOT, 'recipes', 'dagster', 'post_reports.py');
const JOB = join(ROOT, 'recipes', 'kubernetes', 'backfill-job.yaml');
const CRONJOB = join(ROOT, 'recipes', 'kubernetes', 'sync-cronjob.yaml');
const DOCKERFILE = await readFile(join(ROOT, 'Dockerfile'), 'utf8');
const db = await createTestDatabase();
/** Holds `bin/post-reports-etl` (this checkout's CLI) and Python's bytecode, which must not land in recipes/. */
let work: string;

beforeAll(async () => {
  work = await mkdtemp(join(tmpdir(), 'recipes-fan-out-'));
  // The recipes call `post-reports-etl` from PATH, as installed by `npm install -g`: here, the built CLI.
  await mkdir(join(work, 'bin'));
  const shim = join(work, 'bin', 'post-reports-etl');
  await writeFile(shim, `#!/bin/sh\nexec ${shellQuote(process.execPath)} ${shellQuote(CLI)} "$@"\n`);
  await chmod(shim, 0o755);
});
afterAll(async () => {
  await rm(work, { recursive: true, force: true });
});

/** The processes a test started that have not ended, each the leader of its process group. */
const running = new Set<ChildProcess>();
// A test that failed or timed out leaves nothing running: bash and its pipeline, python, the CLI.
afterEach(() => {
  for (const child of running) {
    try {
      if (child.pid !== undefined) process.kill(-child.pid, 'SIGKILL');
    } catch {
      // The group ended between its last output and this.
    }
  }
  running.clear();
});

function shellQuote(text: string): string {
  return `'${text.replaceAll("'", `'\\''`)}'`;
}

/** A simulator for one test: few posts, and reports that take a while to generate, so that the processes overlap. */
async function simulatorForTest(seed: number): Promise<RunningSimulator> {
  const sim = await startSimulator({ seed, postsPerDay: 2, generationDelayMs: 300 });
  onTestFinished(() => sim.close());
  return sim;
}

/**
 * The environment an orchestrator gives every process: the connector's settings (a Secret, a worker's
 * environment) and PATH with `post-reports-etl` on it. The lock wait is the default: the recipes set nothing, and
 * processes starting together on a fresh schema wait for the one applying the migrations.
 */
function orchestratorEnv(sim: RunningSimulator, schema: string): Record<string, string> {
  return {
    ...cliEnv(sim, db.url, { POST_REPORTS_SCHEMA: schema, POST_REPORTS_LOCK_WAIT_MS: '30000' }),
    PATH: `${join(work, 'bin')}:${process.env.PATH ?? ''}`,
    PYTHONPYCACHEPREFIX: join(work, 'pycache'),
  };
}

/** Runs a program to the end with exactly `env`, in a process group afterEach can kill whole. */
function runProcess(
  file: string,
  args: readonly string[],
  env: Record<string, string>,
  cwd = work,
): Promise<CliResult> {
  return runProgram(file, args, env, {
    cwd,
    detached: true,
    onSpawn: (child) => {
      running.add(child);
      child.on('close', () => running.delete(child));
    },
  });
}

/** A shell line as BashOperator runs it (bash -c). */
function runBash(line: string, env: Record<string, string>): Promise<CliResult> {
  return runProcess('bash', ['-c', line], env);
}

/** Prints, as JSON, the values of the module-level constants of a Python file (read, never imported). */
const CONSTANTS_PY = `
import ast, json, sys
tree = ast.parse(open(sys.argv[1], encoding="utf-8").read(), sys.argv[1])
values = {}
for node in tree.body:
    if isinstance(node, ast.Assign):
        for target in node.targets:
            if isinstance(target, ast.Name) and target.id in sys.argv[2:]:
                values[target.id] = ast.literal_eval(node.value)
print(json.dumps(values))
`;

/**
 * Calls one module-level function of a Python file with JSON arguments and prints its result as JSON. The module
 * is not imported (it imports Airflow or Dagster, not installed here): only the function, the names bound to
 * literals and the standard-library imports are evaluated, so the function must need nothing else.
 */
const CALL_PY = `
import ast, json, sys
path, name, args = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])
tree = ast.parse(open(path, encoding="utf-8").read(), path)
def stdlib(node):
    names = [a.name for a in node.names] if isinstance(node, ast.Import) else [node.module or ""]
    return all(n.split(".")[0] in sys.stdlib_module_names for n in names)
def literal(node):
    try:
        ast.literal_eval(node.value)
        return True
    except (ValueError, TypeError, SyntaxError):
        return False
kept = [n for n in tree.body if (isinstance(n, (ast.Import, ast.ImportFrom)) and stdlib(n))
        or (isinstance(n, ast.Assign) and literal(n))
        or (isinstance(n, ast.FunctionDef) and n.name == name)]
namespace = {}
exec(compile(ast.Module(body=kept, type_ignores=[]), path, "exec"), namespace)
print(json.dumps(namespace[name](*args)))
`;

async function python(args: readonly string[], env: Record<string, string>): Promise<unknown> {
  const result = await runProcess('python3', args, env);
  expect(result.code, result.stderr).toBe(0);
  return JSON.parse(result.stdout) as unknown;
}

/** Airflow's rendering of the template expressions the DAGs use (`ds` filters, `macros.ds_add`, params). */
function renderAirflow(
  template: string,
  context: { dataIntervalStart?: string; dataIntervalEnd?: string; params?: Record<string, string> },
): string {
  const dates: Record<string, string | undefined> = {
    data_interval_start: context.dataIntervalStart,
    data_interval_end: context.dataIntervalEnd,
  };
  const date = (name: string): string => {
    const value = dates[name];
    if (value === undefined) throw new Error(`${name} is not in the test's context`);
    return value;
  };
  const rendered = template
    .replaceAll(/\{\{ (\w+) \| ds \}\}/g, (_, name: string) => date(name))
    .replaceAll(/\{\{ macros\.ds_add\((\w+) \| ds, (-?\d+)\) \}\}/g, (_, name: string, days: string) =>
      addDays(date(name), Number(days)),
    )
    .replaceAll(/\{\{ params\.(\w+) \}\}/g, (_, name: string) => {
      const value = context.params?.[name];
      if (value === undefined) throw new Error(`params.${name} is not in the test's context`);
      return value;
    });
  // Every expression rendered: none left for bash to see.
  expect(rendered).not.toMatch(/\{\{|\{%/);
  return rendered;
}

function expectSucceeded(result: CliResult): RunSummary {
  expect(result.code, result.stderr).toBe(EXIT.ok);
  const summary = summaryOf(result);
  expect(summary).toMatchObject({
    status: 'succeeded',
    exitCode: EXIT.ok,
    windows: { failed: 0, interrupted: 0 },
  });
  return summary;
}

/** The schema holds exactly the simulator's posts of [from, to], each once. */
async function expectExact(sim: RunningSimulator, schema: string, from: string, to: string): Promise<void> {
  const reference = sim.referencePosts({ start_date: from, end_date: to });
  expect(reference.length).toBeGreaterThan(0);
  const check = await compareWithReference(db.pool, schema, reference);
  expect(check.problems).toEqual([]);
  expect(check.posts).toBe(reference.length);
}

/** Each window of [from, to] was asked for once (one report creation call), and nothing else was. */
function expectOneReportPerWindow(sim: RunningSimulator, from: string, to: string): void {
  const windows = cutWindows(from, to, 7);
  const calls = Object.entries(sim.stats().creationCallsByWindow).map(([w, times]) => [w, times.length]);
  expect(Object.fromEntries(calls)).toEqual(
    Object.fromEntries(windows.map((w) => [`${w.start}..${w.end}`, 1])),
  );
}

/** Every window of a run's range is accounted for: loaded by it, by another process, or before it began. */
function expectAllAccountedFor(summary: RunSummary): void {
  const { loaded, byOthers, skipped } = summary.windows;
  expect(loaded + byOthers + skipped).toBe(cutWindows(summary.from ?? '', summary.to ?? '', 7).length);
}

it('the Fan-out guide (docs/fan-out.md, linked from the README) names every recipe file, each of which exists', async () => {
  const readme = await readFile(join(ROOT, 'README.md'), 'utf8');
  expect(readme).toContain('[docs/fan-out.md](docs/fan-out.md)');
  const section = await readFile(join(ROOT, 'docs', 'fan-out.md'), 'utf8');
  const named = new Set(section.match(/recipes\/[\w./-]+\.(?:py|yaml)/g));
  expect([...named].sort()).toEqual(
    [AIRFLOW, DAGSTER, JOB, CRONJOB].map((file) => file.slice(ROOT.length)).sort(),
  );
});

describe('the Python recipes compile', () => {
  it.each([AIRFLOW, DAGSTER])('%s', async (file) => {
    needPython();
    const result = await runProcess('python3', ['-m', 'py_compile', file], {
      PATH: process.env.PATH ?? '',
      PYTHONPYCACHEPREFIX: join(work, 'pycache'),
    });
    expect(result.code, result.stderr).toBe(0);
  });
});

describe('the fan-out recipes: many processes on one schema, each window loaded once (the built CLI)', () => {
  it('Airflow catchup: 4 weekly-DAG intervals started at once, plus 2 duplicate triggers of the first', async () => {
    needPython();
    const sim = await simulatorForTest(71);
    const env = orchestratorEnv(sim, 'airflow_catchup');
    const { BACKFILL_INTERVAL_COMMAND: command } = (await python(
      ['-c', CONSTANTS_PY, AIRFLOW, 'BACKFILL_INTERVAL_COMMAND'],
      env,
    )) as { BACKFILL_INTERVAL_COMMAND: string };
    // Four-week intervals (the command does not depend on the schedule): each run has several windows, so the
    // duplicates meet windows claimed by the first run and by each other.
    const first = '2026-06-01';
    const intervals = [0, 1, 2, 3].map((i) => ({
      dataIntervalStart: addDays(first, 28 * i),
      dataIntervalEnd: addDays(first, 28 * (i + 1)),
    }));
    const [firstInterval] = intervals;
    const triggered = [...intervals, firstInterval, firstInterval].map((interval) =>
      renderAirflow(command, interval ?? {}),
    );
    expect(triggered[0]).toContain('backfill --from 2026-06-01 --to 2026-06-28 | tail -n 1');
    const results = await Promise.all(triggered.map((line) => runBash(line, env)));

    const summaries = results.map(expectSucceeded);
    for (const summary of summaries) expectAllAccountedFor(summary);
    const last = addDays(first, 28 * 4 - 1);
    await expectExact(sim, 'airflow_catchup', first, last);
    expectOneReportPerWindow(sim, first, last);
    // Every window loaded by one process: the duplicates counted the first interval's as done by others.
    const loaded = summaries.reduce((sum, s) => sum + s.windows.loaded, 0);
    expect(loaded).toBe(cutWindows(first, last, 7).length);
    const firstIntervalRuns = [summaries[0], summaries[4], summaries[5]];
    expect(firstIntervalRuns.reduce((sum, s) => sum + (s?.windows.loaded ?? 0), 0)).toBe(4);
  });

  it('Airflow mapping: the plan’s windows to load, one process each, at once (one window loaded before)', async () => {
    needPython();
    const sim = await simulatorForTest(72);
    const schema = 'airflow_mapped';
    const env = orchestratorEnv(sim, schema);
    const params = { from_date: '2026-07-01', to_date: '2026-08-12' };
    const windows = cutWindows(params.from_date, params.to_date, 7);
    // Another run loaded one window of the range earlier.
    const loadedBefore = windows[2];
    expect(loadedBefore).toEqual({ start: '2026-07-13', end: '2026-07-19' });
    expectSucceeded(
      await runCli(['backfill', '--from', '2026-07-13', '--to', '2026-07-19'], orchestratorEnv(sim, schema)),
    );

    const { PLAN_COMMAND } = (await python(['-c', CONSTANTS_PY, AIRFLOW, 'PLAN_COMMAND'], env)) as {
      PLAN_COMMAND: string;
    };
    const before = await snapshotSchema(db.pool, schema);
    const requestsBefore = sim.stats().requests;
    const plan = await runBash(renderAirflow(PLAN_COMMAND, { params }), env);
    expect(plan.code, plan.stderr).toBe(EXIT.ok);
    // The plan is read-only: no API call, nothing written.
    expect(sim.stats().requests).toBe(requestsBefore);
    expect(await snapshotSchema(db.pool, schema)).toBe(before);
    const lines = plan.stdout
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as PlanLine);
    expect(lines.map(({ start, end }) => ({ start, end }))).toEqual(windows);
    expect(lines.map((l) => [l.state, l.load])).toEqual(
      windows.map((w) => (w.start === loadedBefore?.start ? ['loaded', false] : ['todo', true])),
    );
    const loadedRows = sim.referencePosts({ start_date: '2026-07-13', end_date: '2026-07-19' }).length;
    expect(lines.map((l) => [l.rows, l.claimedBy])).toEqual(
      windows.map((w) => [w.start === loadedBefore?.start ? loadedRows : null, null]),
    );

    // The DAG's own parsing of the plan: one backfill command line per window to load.
    const commands = (await python(
      ['-c', CALL_PY, AIRFLOW, 'window_commands', JSON.stringify([plan.stdout])],
      env,
    )) as string[];
    expect(commands).toHaveLength(windows.length - 1);
    expect(commands[0]).toBe(
      'set -o pipefail; post-reports-etl backfill --from 2026-07-01 --to 2026-07-05 | tail -n 1',
    );
    const results = await Promise.all(commands.map((line) => runBash(renderAirflow(line, {}), env)));

    const summaries = results.map(expectSucceeded);
    for (const summary of summaries) expectAllAccountedFor(summary);
    expect(summaries.map((s) => s.windows.loaded)).toEqual(commands.map(() => 1));
    await expectExact(sim, schema, params.from_date, params.to_date);
    // The window loaded before got its report then, and no other since.
    expectOneReportPerWindow(sim, params.from_date, params.to_date);
  });

  it('Dagster: 4 adjacent weekly partitions materialized at once', async () => {
    needPython();
    const sim = await simulatorForTest(73);
    const env = orchestratorEnv(sim, 'dagster_weeks');
    // WeeklyPartitionsDefinition(day_offset=1): Monday to the next Monday; the asset passes the last day included.
    const mondays = ['2026-09-07', '2026-09-14', '2026-09-21', '2026-09-28'];
    const argvs = await Promise.all(
      mondays.map(
        async (monday) =>
          (await python(
            ['-c', CALL_PY, DAGSTER, 'command_for', JSON.stringify([monday, addDays(monday, 6)])],
            env,
          )) as string[],
      ),
    );
    expect(argvs[0]).toEqual(['post-reports-etl', 'backfill', '--from', '2026-09-07', '--to', '2026-09-13']);
    // Found on PATH, as subprocess.run finds it.
    const results = await Promise.all(argvs.map(([file, ...args]) => runProcess(file ?? '', args, env)));

    const summaries = results.map(expectSucceeded);
    for (const summary of summaries) expectAllAccountedFor(summary);
    expect(summaries.map((s) => s.windows.loaded)).toEqual([1, 1, 1, 1]);
    await expectExact(sim, 'dagster_weeks', '2026-09-07', '2026-10-04');
    expectOneReportPerWindow(sim, '2026-09-07', '2026-10-04');
  });

  it('Kubernetes Job: `parallelism` pods running the same backfill split its range', async () => {
    const sim = await simulatorForTest(74);
    const job = parseYaml(await readFile(JOB, 'utf8')) as KubernetesJob;
    expect(job.kind).toBe('Job');
    const { parallelism, completions, podFailurePolicy, template } = job.spec;
    expect(parallelism).toBe(4);
    // Every pod must succeed, and each does only once the whole range is loaded.
    expect(completions).toBe(parallelism);
    expect(template.spec.restartPolicy).toBe('Never');
    expect(podFailurePolicy.rules).toContainEqual(
      expect.objectContaining({
        action: 'FailJob',
        onExitCodes: expect.objectContaining({ values: [EXIT.usage] }),
      }),
    );
    const [container] = template.spec.containers;
    expect(container?.envFrom).toEqual([{ secretRef: { name: 'post-reports-etl' } }]);
    const argv = containerArgv(container);
    const from = argv[argv.indexOf('--from') + 1] ?? '';
    const to = argv[argv.indexOf('--to') + 1] ?? '';
    expect(argv).toContain('backfill');

    // The Secret's settings, then the container's own env entries.
    const env = { ...orchestratorEnv(sim, 'k8s_job'), ...containerEnv(container) };
    const pods = Array.from({ length: parallelism }, () =>
      runProcess(argv[0] ?? '', argv.slice(1), env, ROOT),
    );
    const summaries = (await Promise.all(pods)).map(expectSucceeded);
    for (const summary of summaries) expectAllAccountedFor(summary);
    const windows = cutWindows(from, to, 7);
    expect(summaries.reduce((sum, s) => sum + s.windows.loaded, 0)).toBe(windows.length);
    await expectExact(sim, 'k8s_job', from, to);
    expectOneReportPerWindow(sim, from, to);
  });

  it('Kubernetes CronJob: the daily sync, then two at once (concurrencyPolicy: Allow)', async () => {
    const sim = await simulatorForTest(75);
    const cronJob = parseYaml(await readFile(CRONJOB, 'utf8')) as KubernetesCronJob;
    expect(cronJob.kind).toBe('CronJob');
    expect(cronJob.spec.concurrencyPolicy).toBe('Allow');
    const [container] = cronJob.spec.jobTemplate.spec.template.spec.containers;
    const argv = containerArgv(container);
    expect(argv.slice(-1)).toEqual(['sync']);
    const ownEnv = containerEnv(container);
    expect(ownEnv.POST_REPORTS_START_DATE).toMatch(/^\d{4}-\d{2}-\d{2}$/);
    // The first sync from 20 days before the tests' day: the range ends on it (the CLI's clock: withTestClock).
    const start = addDays(TODAY, -20);
    const env = { ...orchestratorEnv(sim, 'k8s_sync'), ...ownEnv, POST_REPORTS_START_DATE: start };

    const nightly = expectSucceeded(await runProcess(argv[0] ?? '', argv.slice(1), env, ROOT));
    expect(nightly).toMatchObject({ command: 'sync', from: start, cursor: TODAY });
    await expectExact(sim, 'k8s_sync', start, TODAY);

    // The next night's sync starts while the previous one still runs.
    const overlapping = await Promise.all([
      runProcess(argv[0] ?? '', argv.slice(1), env, ROOT),
      runProcess(argv[0] ?? '', argv.slice(1), env, ROOT),
    ]);
    for (const result of overlapping) expect(expectSucceeded(result).cursor).toBe(TODAY);
    await expectExact(sim, 'k8s_sync', start, TODAY);
  });
});

/** A line of `plan` (the fields the test reads). */
interface PlanLine {
  readonly start: string;
  readonly end: string;
  readonly state: string;
  readonly load: boolean;
  readonly rows: number | null;
  readonly claimedBy: unknown;
}

interface KubernetesContainer {
  readonly command?: readonly string[];
  readonly args?: readonly string[];
  readonly env?: readonly { readonly name: string; readonly value: string }[];
  readonly envFrom?: readonly unknown[];
}

interface PodTemplate {
  readonly spec: { readonly restartPolicy: string; readonly containers: readonly KubernetesContainer[] };
}

interface KubernetesJob {
  readonly kind: string;
  readonly spec: {
    readonly parallelism: number;
    readonly completions: number;
    readonly podFailurePolicy: { readonly rules: readonly unknown[] };
    readonly template: PodTemplate;
  };
}

interface KubernetesCronJob {
  readonly kind: string;
  readonly spec: {
    readonly concurrencyPolicy: string;
    readonly jobTemplate: { readonly spec: { readonly template: PodTemplate } };
  };
}

/** What the container runs: its command, or the image's ENTRYPOINT (exec form), then its args. */
function containerArgv(container: KubernetesContainer | undefined): string[] {
  const entrypoint = JSON.parse(/^ENTRYPOINT (\[.*\])$/m.exec(DOCKERFILE)?.[1] ?? 'null') as string[];
  const argv = [...(container?.command ?? entrypoint), ...(container?.args ?? [])];
  // The image runs node from its PATH; here, this Node.
  return argv[0] === 'node' ? [process.execPath, ...argv.slice(1)] : argv;
}

function containerEnv(container: KubernetesContainer | undefined): Record<string, string> {
  return Object.fromEntries((container?.env ?? []).map(({ name, value }) => [name, value]));
}
