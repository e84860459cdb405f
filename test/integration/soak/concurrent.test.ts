import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cutWindows } from '../../../src/pipeline/windows.js';
import { Random } from '../../../src/simulator/random.js';
import { type RunningSimulator, startSimulator } from '../../../src/simulator/server.js';
import { drawConcurrentPlan, processArgs } from '../../soak/concurrent-plan.js';
import { type ApiCall, duplicateLiveWindows } from '../../soak/live-requests.js';
import { RecordingProxy } from '../../soak/recording-proxy.js';

describe("the concurrent soak's plan", () => {
  it('draws 2 to 4 processes over whole windows of the grid, each shape keeping its promise', () => {
    const shapes = new Set<string>();
    for (let seed = 0; seed < 400; seed += 1) {
      const random = new Random(seed);
      const windows = 1 + (seed % 9);
      const canSync = seed % 2 === 0;
      const plan = drawConcurrentPlan(random, windows, { canSync });
      shapes.add(plan.shape);
      const { processes } = plan;
      expect(processes.length).toBeGreaterThanOrEqual(2);
      expect(processes.length).toBeLessThanOrEqual(4);
      expect(plan.victim).toBeLessThan(processes.length);
      for (const p of processes) {
        expect(0 <= p.first && p.first <= p.last && p.last < windows).toBe(true);
      }
      if (!canSync) expect(processes.every((p) => p.command === 'backfill')).toBe(true);
      if (plan.shape === 'identical')
        expect(new Set(processes.map((p) => `${p.first}..${p.last}`)).size).toBe(1);
      if (plan.shape === 'overlapping') {
        const shared = Math.max(...processes.map((p) => p.first));
        expect(processes.every((p) => p.last >= shared)).toBe(true);
      }
      if (plan.shape === 'disjoint') {
        // Contiguous pieces covering the grid, one after the other.
        expect(processes[0]?.first).toBe(0);
        expect(processes.at(-1)?.last).toBe(windows - 1);
        for (const [i, p] of processes.slice(1).entries())
          expect(p.first).toBe((processes[i]?.last ?? 0) + 1);
      }
      if (plan.shape === 'sync') expect(processes[0]?.command).toBe('sync');
    }
    expect([...shapes].sort()).toEqual(['disjoint', 'identical', 'overlapping', 'sync']);
  });

  it('is the same plan for the same seed', () => {
    const a = drawConcurrentPlan(new Random(42), 6, { canSync: true });
    const b = drawConcurrentPlan(new Random(42), 6, { canSync: true });
    expect(a).toEqual(b);
  });

  it("gives each process a range on the episode's grid, so that it cuts the episode's windows", () => {
    const grid = cutWindows('2025-05-07', '2025-06-03', 7);
    const base = ['--window-days', '7', '--schema', 's'];
    const args = processArgs({ command: 'backfill', first: 1, last: 2 }, grid, base, {
      episodeFrom: '2025-05-07',
      reload: true,
    });
    expect(args).toEqual(['backfill', '--from', '2025-05-12', '--to', '2025-05-25', ...base, '--reload']);
    expect(cutWindows('2025-05-12', '2025-05-25', 7)).toEqual(grid.slice(1, 3));
    expect(
      processArgs({ command: 'sync', first: 0, last: 3 }, grid, base, {
        episodeFrom: '2025-05-07',
        reload: true,
      }),
    ).toEqual(['sync', '--start-date', '2025-05-07', ...base]);
  });
});

const call = (
  client: number,
  window: string,
  reportId: string | null,
  startMs: number,
  endMs: number,
): ApiCall => ({
  client,
  method: reportId === null ? 'POST' : 'GET',
  path: '/v4/reports/posts',
  window,
  reportId,
  startMs,
  endMs,
});

describe("the concurrent soak's duplicate live request detector", () => {
  const W = '2025-05-05..2025-05-11';

  it('accepts one process after the other on a window, and one process retrying on its own', () => {
    expect(
      duplicateLiveWindows([
        call(0, W, 'r1', 0, 5),
        call(0, W, 'r1', 6, 9),
        call(1, W, 'r1', 10, 12),
        call(1, W, 'r2', 13, 20),
        call(1, W, null, 14, 15),
      ]),
    ).toEqual([]);
  });

  it('finds two processes on one window at once, even on the same (reused) report', () => {
    const found = duplicateLiveWindows([
      call(0, W, 'r1', 0, 2),
      call(1, W, 'r1', 3, 4),
      call(0, W, 'r1', 5, 9),
      call(2, '2025-05-12..2025-05-18', 'r3', 0, 9),
    ]);
    expect(found.map((d) => d.window)).toEqual([W]);
    expect(found[0]?.spans.map((s) => s.client).sort()).toEqual([0, 1]);
  });

  it('counts a creation call that got no report as the time its process was at work on the window', () => {
    expect(duplicateLiveWindows([call(0, W, 'r1', 0, 10), call(1, W, null, 4, 5)])).toHaveLength(1);
  });
});

describe("the concurrent soak's recording proxy", () => {
  let sim: RunningSimulator;
  let proxy: RecordingProxy;
  beforeAll(async () => {
    sim = await startSimulator({ seed: 5, postsPerDay: 3 });
    proxy = await RecordingProxy.start(sim.baseUrl, 2);
  });
  afterAll(async () => {
    await proxy.close();
    await sim.close();
  });

  const create = (client: number) =>
    fetch(`${proxy.baseUrl(client)}/reports/posts`, {
      method: 'POST',
      headers: { authorization: `Bearer ${sim.token}`, 'content-type': 'application/json' },
      body: JSON.stringify({ start_date: '2025-05-05', end_date: '2025-05-11' }),
    });

  it('forwards calls as they are and records who made them, for which window', async () => {
    const created = (await (await create(1)).json()) as { id: string };
    const read = await fetch(`${proxy.baseUrl(1)}/reports/posts/${created.id}`, {
      headers: { authorization: `Bearer ${sim.token}` },
    });
    expect(read.status).toBe(200);
    const { calls, unknownReports } = proxy.take();
    expect(unknownReports).toBe(0);
    expect(calls.map((c) => [c.client, c.method, c.window, c.reportId])).toEqual([
      [1, 'POST', '2025-05-05..2025-05-11', created.id],
      [1, 'GET', '2025-05-05..2025-05-11', created.id],
    ]);
    expect(proxy.creationsAnswered).toBe(sim.stats().creationCalls);
  });

  it('cuts the connection when the simulator cuts it', async () => {
    sim.setFaults({ dropShare: 1 });
    try {
      await expect(create(0)).rejects.toThrow();
    } finally {
      sim.setFaults({ dropShare: 0 });
    }
    expect(proxy.take().calls.map((c) => [c.client, c.reportId])).toEqual([[0, null]]);
  });
});
