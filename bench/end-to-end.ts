/*
 * Figure 2: a year's backfill against a simulator with a generation delay and per-request latency, against the
 * ideal: the same reports fetched by a bare loop at the same concurrency that asks again the moment an answer
 * arrives (the simulator's own limit). A fresh simulator serves each run, so no report is reused across runs.
 */
import pg from 'pg';
import type { Window } from '../src/model/window.js';
import { cutWindows } from '../src/pipeline/windows.js';
import { type BenchContext, cliEnv, TOKEN } from './bench-context.js';
import { type Connector, runCli, startSimulatorChild } from './child.js';
import { median } from './stats.js';

export interface EndToEndResult {
  readonly connector: Connector;
  readonly from: string;
  readonly to: string;
  readonly windows: number;
  readonly concurrency: number;
  readonly generationDelayMs: number;
  readonly latencyMs: number;
  readonly idealMs: number;
  readonly connectorMs: number;
  readonly ratio: number;
  readonly samples: Record<string, number[]>;
}

async function getJson(url: URL): Promise<Record<string, unknown>> {
  const response = await fetch(url, { headers: { authorization: `Bearer ${TOKEN}` } });
  if (!response.ok) throw new Error(`${url} answered ${response.status}`);
  return (await response.json()) as Record<string, unknown>;
}

/** One window the bare way: create, ask again as soon as an answer arrives until DONE, read every page. */
async function idealWindow(baseUrl: string, window: Window): Promise<void> {
  const created = await fetch(new URL('reports/posts', `${baseUrl}/`), {
    method: 'POST',
    headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' },
    body: JSON.stringify({ start_date: window.start, end_date: window.end }),
  });
  if (!created.ok) throw new Error(`create answered ${created.status}`);
  const { id } = (await created.json()) as { id: string | number };
  const url = new URL(`reports/posts/${encodeURIComponent(String(id))}`, `${baseUrl}/`);
  let body = await getJson(url);
  while (body.status !== 'DONE') body = await getJson(url);
  for (;;) {
    const metadata = body.response_metadata as { next_page: string | null }[] | undefined;
    const next = metadata?.[0]?.next_page ?? null;
    if (next === null) return;
    url.searchParams.set('page', next);
    body = await getJson(url);
  }
}

async function ideal(baseUrl: string, windows: readonly Window[], concurrency: number): Promise<number> {
  const started = performance.now();
  let nextIndex = 0;
  const worker = async (): Promise<void> => {
    for (let i = nextIndex++; i < windows.length; i = nextIndex++) await idealWindow(baseUrl, windows[i]!);
  };
  await Promise.all(Array.from({ length: concurrency }, worker));
  return performance.now() - started;
}

export async function benchEndToEnd(context: BenchContext): Promise<EndToEndResult> {
  const from = '2025-01-01';
  const to = context.smoke ? '2025-01-28' : '2025-12-31';
  const concurrency = 8;
  const generationDelayMs = context.smoke ? 300 : 2000;
  const latencyMs = context.smoke ? 10 : 50;
  const windows = cutWindows(from, to, 7);
  const simulator = { postsPerDay: 50, generationDelayMs, latencyMs };
  const samples: Record<string, number[]> = { ideal: [], connector: [] };
  const runConnector = async (schema: string): Promise<number> => {
    const sim = await startSimulatorChild(simulator);
    try {
      const result = await runCli(
        context.connector,
        ['backfill', '--from', from, '--to', to, '--concurrency', String(concurrency), '--schema', schema],
        cliEnv(context, sim.baseUrl),
      );
      if (result.code !== 0) throw new Error(`backfill exited ${result.code}: ${result.stderr.slice(-2000)}`);
      return result.wallMs;
    } finally {
      await sim.stop();
      await context.pool.query(`DROP SCHEMA IF EXISTS ${pg.escapeIdentifier(schema)} CASCADE`);
    }
  };
  for (let rep = 0; rep < context.repetitions; rep++) {
    const sim = await startSimulatorChild(simulator);
    let idealMs: number;
    try {
      idealMs = await ideal(sim.baseUrl, windows, concurrency);
    } finally {
      await sim.stop();
    }
    const connectorMs = await runConnector(`bench_e2e_${rep}`);
    samples.ideal!.push(idealMs);
    samples.connector!.push(connectorMs);
    context.log(
      `e2e rep ${rep + 1}: ideal ${Math.round(idealMs)} ms, connector ${Math.round(connectorMs)} ms`,
    );
  }
  const ratios = samples.connector!.map((c, i) => c / samples.ideal![i]!);
  return {
    connector: context.connector,
    from,
    to,
    windows: windows.length,
    concurrency,
    generationDelayMs,
    latencyMs,
    idealMs: median(samples.ideal!),
    connectorMs: median(samples.connector!),
    ratio: median(ratios),
    samples,
  };
}
