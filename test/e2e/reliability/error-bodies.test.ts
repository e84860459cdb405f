import { afterAll, describe, expect, it } from 'vitest';
import { type RunningSimulator, startSimulator } from '../../../src/simulator/server.js';
import { startCli } from '../../helpers/cli.js';
import { createTestDatabase } from '../../helpers/database.js';
import { cliEnv } from '../../helpers/e2e-env.js';
import { compareWithReference } from '../../helpers/reference-check.js';
import { summaryOf } from '../../helpers/summary.js';

const db = await createTestDatabase();
const sims: RunningSimulator[] = [];
afterAll(async () => {
  for (const sim of sims) await sim.close();
});

const FROM = '2026-03-02';
const TO = '2026-03-29';
const REFUSED = '2026-03-16';
const MESSAGE = 'custom segment value "Spring Sale" is no longer configured';
/** Past the API's reuse period, within which it hands the vanished report back. */
const REUSE_PASSED_MS = 4 * 3_600_000;

// The v4 spec does not show the error body's shape: whatever it is, a refusal fails its window with the API's
// message, 5xx are retried, and a report gone mid-window is asked for again.
const shapes = [
  { shape: 'text', message: MESSAGE },
  { shape: 'array', message: MESSAGE },
  { shape: 'empty', message: '(empty body)' },
] as const;

describe('error bodies of any shape (the built CLI)', () => {
  for (const [i, { shape, message }] of shapes.entries()) {
    it(`${shape} error bodies: the refusal's message, 5xx retried, a vanished report asked for again`, async () => {
      const sim = await startSimulator({ seed: 150 + i, postsPerDay: 20, pageSize: 40 });
      sims.push(sim);
      sim.setFaults({ errorBodyShape: shape, serverErrorShare: 0.2, reportGoneAfterPage: 1 });
      sim.refuseReports([REFUSED], MESSAGE);
      const schema = `bodies_${shape}`;
      const started = startCli(
        ['backfill', '--from', FROM, '--to', TO, '--concurrency', '1', '--schema', schema],
        cliEnv(sim, db.url, { POST_REPORTS_MAX_ATTEMPTS: '20', LOG_LEVEL: 'debug' }),
      );
      // The window whose report vanished waits to retry: time passes for the API meanwhile, as for a real client.
      await started.waitForOutput('window attempt failed; retrying');
      sim.advanceTime(REUSE_PASSED_MS);
      const run = await started.done;
      expect(run.code, run.stderr).toBe(3);
      const summary = summaryOf(run);
      expect(summary.failures).toEqual([
        {
          start: REFUSED,
          end: '2026-03-22',
          code: 'REPORT_REJECTED',
          message: `POST /reports/posts answered 400 (attempt 1): the API refused the report for ${REFUSED}..2026-03-22: ${message}`,
        },
      ]);
      const faults = sim.stats().faults;
      expect(faults['report-gone']).toBe(1);
      expect(summary.retries).toBe(faults['server-error'] ?? 0);
      expect(summary).toMatchObject({ windows: { planned: 4, loaded: 3, failed: 1 } });
      const others = sim
        .referencePosts({ start_date: FROM, end_date: TO })
        .filter((post) => post.date < REFUSED || post.date > '2026-03-22');
      const check = await compareWithReference(db.pool, schema, others);
      expect(check.problems).toEqual([]);
      expect(check.posts).toBe(others.length);
    });
  }
});
