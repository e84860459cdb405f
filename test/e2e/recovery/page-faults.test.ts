import { afterAll, describe, expect, it } from 'vitest';
import type { RunSummary } from '../../../src/pipeline/run-summary.js';
import { type Faults, type RunningSimulator, startSimulator } from '../../../src/simulator/server.js';
import { runCli, startCli } from '../../helpers/cli.js';
import { createTestDatabase } from '../../helpers/database.js';
import { cliEnv } from '../../helpers/e2e-env.js';
import { compareWithReference } from '../../helpers/reference-check.js';
import { summaryOf } from '../../helpers/summary.js';

const db = await createTestDatabase();
const sims: RunningSimulator[] = [];
afterAll(async () => {
  for (const sim of sims) await sim.close();
});

// One 7-day window of 140 posts in pages of 10: 14 pages, so a fault can strike at page three of many.
const FROM = '2025-06-02';
const TO = '2025-06-08';
const PAGES = 14;
/** Past the API's reuse period (3 h). */
const REUSE_PASSED_MS = 4 * 3_600_000;

async function simulator(seed: number): Promise<RunningSimulator> {
  // Full pages: the posts each attempt fetched are counted below in pages of 10 (ragged pages: e2e/page-cycle and
  // the soak).
  const sim = await startSimulator({ seed, postsPerDay: 20, pageSize: 10, shapes: { pageFill: 'full' } });
  sims.push(sim);
  return sim;
}

function args(schema: string): string[] {
  return [
    'backfill',
    '--from',
    FROM,
    '--to',
    TO,
    '--window-days',
    '7',
    '--concurrency',
    '1',
    '--schema',
    schema,
  ];
}

async function exact(sim: RunningSimulator, schema: string): Promise<string[]> {
  const reference = sim.referencePosts({ start_date: FROM, end_date: TO });
  const check = await compareWithReference(db.pool, schema, reference);
  return check.posts === reference.length
    ? check.problems
    : [...check.problems, `${check.posts} posts loaded`];
}

interface Case {
  readonly name: string;
  readonly faults: Partial<Faults>;
  /** The simulator's name for it in stats().faults. */
  readonly served: string;
  /** What the connector reports for it. */
  readonly status: number;
  /**
   * Reports the simulator made: a report whose page token expired is handed out again by an identical creation
   * call within the reuse period, and is read again from its first page.
   */
  readonly reports: number;
  /**
   * A vanished report is handed back too, within the reuse period: the test moves the simulator's clock past it
   * while the window waits to retry, as time passes for a real client.
   */
  readonly afterReuse: boolean;
}

const cases: Case[] = [
  {
    name: 'a report that vanishes after two pages',
    faults: { reportGoneAfterPage: 2 },
    served: 'report-gone',
    status: 404,
    reports: 2,
    afterReuse: true,
  },
  {
    name: 'a page token that expires at page three',
    faults: { pageTokenExpiresAtPage: 3 },
    served: 'page-token-expired',
    status: 410,
    reports: 1,
    afterReuse: false,
  },
  {
    // The v4 spec leaves the answer to an invalid page value open: a 400 must not fail every resume.
    name: 'a page token answered 400 at page three',
    faults: { pageTokenExpiresAtPage: 3, pageTokenErrorStatus: 400 },
    served: 'page-token-expired',
    status: 400,
    reports: 1,
    afterReuse: false,
  },
];

describe('a report or a page token gone mid-window (the built CLI)', () => {
  for (const [i, c] of cases.entries()) {
    it(`${c.name}, mid-window: the attempt is retried with a new report, and the window loads exactly`, async () => {
      const sim = await simulator(60 + i);
      const schema = `mid_${i}`;
      sim.setFaults(c.faults);
      const started = startCli(args(schema), cliEnv(sim, db.url, { LOG_LEVEL: 'debug' }));
      if (c.afterReuse) {
        await started.waitForOutput('window attempt failed; retrying');
        sim.advanceTime(REUSE_PASSED_MS);
      }
      const run = await started.done;
      expect(run.code, run.stderr).toBe(0);
      expect(sim.stats().faults[c.served]).toBe(1);
      expect(run.stderr).toContain(`"code":"REPORT_GONE"`);
      expect(run.stderr).toContain(`(${c.status} on page 3)`);
      // The window's second attempt asked for a report again, and read it from its first page.
      expect(summaryOf(run)).toMatchObject({ status: 'succeeded', reportsCreated: 2, posts: 140 });
      expect(sim.stats().reportsCreated).toBe(c.reports);
      expect(await exact(sim, schema)).toEqual([]);
    });

    it(`${c.name}, where a run killed by SIGKILL resumes: the resume starts over with a new report, exactly`, async () => {
      const sim = await simulator(70 + i);
      const schema = `resumed_${i}`;
      const env = cliEnv(sim, db.url, { LOG_LEVEL: 'debug' });
      // Page three is held until the kill, which lands after page two is staged: page three never came.
      const gate = sim.holdAnswers('page', 2);
      const killed = startCli(args(schema), env);
      await killed.waitForOutput('"page":2,');
      await gate.held;
      killed.child.kill('SIGKILL');
      expect((await killed.done).signal).toBe('SIGKILL');
      gate.release();
      sim.setFaults(c.faults);

      const resuming = startCli(args(schema), env);
      if (c.afterReuse) {
        await resuming.waitForOutput('window attempt failed; retrying');
        sim.advanceTime(REUSE_PASSED_MS);
      }
      const resumed = await resuming.done;
      expect(resumed.code, resumed.stderr).toBe(0);
      expect(resumed.stderr).toContain('resuming a staged window');
      expect(sim.stats().faults[c.served]).toBe(1);
      expect(resumed.stderr).toContain(`(${c.status} on page 3)`);
      const summary: RunSummary = summaryOf(resumed);
      // The resumed report failed at page three: every page came again from the new report.
      expect(summary).toMatchObject({ status: 'succeeded', reportsCreated: 1, posts: 140, pages: PAGES });
      expect(sim.stats().reportsCreated).toBe(c.reports);
      expect(await exact(sim, schema)).toEqual([]);
    });
  }

  it('a page token that expires while its report lives, answered 404: the report handed back is read again from its first page', async () => {
    const sim = await simulator(90);
    const schema = 'expired_404';
    sim.setFaults({ pageTokenExpiresAtPage: 3, pageTokenErrorStatus: 404 });
    const run = await runCli(args(schema), cliEnv(sim, db.url, { LOG_LEVEL: 'debug' }));
    expect(run.code, run.stderr).toBe(0);
    expect(sim.stats().faults['page-token-expired']).toBe(1);
    expect(run.stderr).toContain('(404 on page 3)');
    expect(run.stderr).toContain('the report thought gone answers');
    // The identical request got the same report back (the API's reuse): no new one was made, none was needed.
    expect(sim.stats().reportsCreated).toBe(1);
    expect(summaryOf(run)).toMatchObject({ status: 'succeeded', reportsCreated: 2, posts: 140 });
    expect(await exact(sim, schema)).toEqual([]);
  });

  it('a report gone and handed back within the reuse period: one request for its first page, and the window fails as the API answers', async () => {
    const sim = await simulator(91);
    const schema = 'gone_handed_back';
    sim.setFaults({ reportGoneAfterPage: 2 });
    const run = await runCli(args(schema), cliEnv(sim, db.url, { LOG_LEVEL: 'debug' }));
    expect(run.code, run.stderr).toBe(3);
    expect(run.stderr).toContain('the API returns the same vanished report');
    // Page 3 found it gone; the attempt after asked for its first page once, found it gone too, and stopped.
    expect(sim.stats().faults['report-gone']).toBe(2);
    expect(sim.stats().reportsCreated).toBe(1);
  });

  it('a plain resume counts in its summary only the pages it fetched, not those staged before the kill', async () => {
    const sim = await simulator(80);
    const schema = 'resumed_plain';
    const env = cliEnv(sim, db.url, { LOG_LEVEL: 'debug' });
    const gate = sim.holdAnswers('page', 2);
    const killed = startCli(args(schema), env);
    await killed.waitForOutput('"page":2,');
    await gate.held;
    killed.child.kill('SIGKILL');
    await killed.done;
    gate.release();

    const resumed = await runCli(args(schema), env);
    expect(resumed.code, resumed.stderr).toBe(0);
    expect(resumed.stderr).toContain('resuming a staged window');
    expect(summaryOf(resumed)).toMatchObject({ reportsCreated: 0, posts: 140, pages: PAGES - 2 });
    expect(await exact(sim, schema)).toEqual([]);
  });
});
