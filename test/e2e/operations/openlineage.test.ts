/*
 * --openlineage-url: every run sends an OpenLineage START event when it begins and COMPLETE, FAIL or ABORT when it
 * ends, POSTed as JSON to <url>/api/v1/lineage (a stand-in endpoint here), with one run id, the job named by command,
 * schema and organization, and the schema's tables as outputs (the rows loaded on posts); an endpoint that refuses is a
 * warning, and the run's exit code is its own; no credential of the URL or the database is in an event or an output.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type RunningSimulator, startSimulator } from '../../../src/simulator/server.js';
import { runCli } from '../../helpers/cli.js';
import { createTestDatabase } from '../../helpers/database.js';
import { cliEnv } from '../../helpers/e2e-env.js';
import { type RecordingServer, startRecordingServer } from '../../helpers/recording-server.js';
import { summaryOf } from '../../helpers/summary.js';

const db = await createTestDatabase();
let sim: RunningSimulator;
let endpoint: RecordingServer;

const PASSWORD = 'ol-s3cret';
const RANGE = ['--from', '2026-03-02', '--to', '2026-03-22', '--window-days', '7'];

beforeAll(async () => {
  sim = await startSimulator({ seed: 47, postsPerDay: 20 });
  endpoint = await startRecordingServer();
});
afterAll(async () => {
  await sim.close();
  await endpoint.close();
});

interface Event {
  readonly eventType: string;
  readonly eventTime: string;
  readonly producer: string;
  readonly schemaURL: string;
  readonly run: {
    readonly runId: string;
    readonly facets?: { readonly errorMessage?: { readonly message: string } };
  };
  readonly job: { readonly namespace: string; readonly name: string };
  readonly inputs: readonly unknown[];
  readonly outputs: readonly {
    readonly namespace: string;
    readonly name: string;
    readonly outputFacets?: { readonly outputStatistics?: { readonly rowCount: number } };
  }[];
}

function endpointUrl(): string {
  const url = new URL(endpoint.url);
  url.username = 'lineage';
  url.password = PASSWORD;
  return url.toString();
}

/** The events sent since `from`, parsed, after checking where and how each was sent. */
function eventsSince(from: number): Event[] {
  return endpoint.pushes.slice(from).map((push) => {
    expect(push.method).toBe('POST');
    expect(push.path).toBe('/api/v1/lineage');
    expect(push.contentType).toBe('application/json');
    expect(push.authorization).toBe(`Basic ${Buffer.from(`lineage:${PASSWORD}`).toString('base64')}`);
    return JSON.parse(push.body) as Event;
  });
}

describe('--openlineage-url (the built CLI)', () => {
  it('sends START then COMPLETE of one run, the schema’s tables as outputs; FAIL for a run that fails', async () => {
    const env = cliEnv(sim, db.url, {
      POST_REPORTS_SCHEMA: 'lineage',
      POST_REPORTS_OPENLINEAGE_URL: endpointUrl(),
    });
    const from = endpoint.pushes.length;
    const ok = await runCli(['backfill', ...RANGE], env);
    expect(ok.code, ok.stderr).toBe(0);
    const [start, complete, ...more] = eventsSince(from);
    expect(more).toEqual([]);
    expect(start?.eventType).toBe('START');
    expect(complete?.eventType).toBe('COMPLETE');
    expect(complete?.run.runId).toBe(start?.run.runId);
    expect(start?.run.runId).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    expect(start?.job).toEqual({ namespace: 'post_reports_etl', name: 'backfill.lineage.default' });
    expect(start?.schemaURL).toMatch(/^https:\/\/openlineage\.io\/spec\/2-0-2\/OpenLineage\.json/);
    expect(Date.parse(complete!.eventTime)).toBeGreaterThanOrEqual(Date.parse(start!.eventTime));
    const database = new URL(db.url);
    const namespace = `postgres://${database.hostname}:${database.port || '5432'}`;
    const name = decodeURIComponent(database.pathname.slice(1));
    expect(complete?.outputs.map((o) => [o.namespace, o.name])).toEqual([
      [namespace, `${name}.lineage.posts`],
      [namespace, `${name}.lineage.post_custom_segments`],
    ]);
    expect(complete?.outputs[0]?.outputFacets?.outputStatistics?.rowCount).toBe(summaryOf(ok).posts);
    for (const push of endpoint.pushes.slice(from)) expect(push.body).not.toContain(PASSWORD);
    expect(ok.stderr).not.toContain(PASSWORD);

    // A window the API refuses: exit 3, and the run's end is a FAIL of a new run.
    sim.refuseReports(['2026-03-09'], 'segment value no longer exists');
    const next = endpoint.pushes.length;
    const failed = await runCli(['backfill', ...RANGE, '--reload'], env);
    sim.refuseReports([]);
    expect(failed.code, failed.stderr).toBe(3);
    const events = eventsSince(next);
    expect(events.map((e) => e.eventType)).toEqual(['START', 'FAIL']);
    expect(events[1]?.run.runId).toBe(events[0]?.run.runId);
    expect(events[0]?.run.runId).not.toBe(start?.run.runId);
  });

  it('warns when the endpoint refuses, without its password: the exit code is the run’s', async () => {
    endpoint.answerWith(400, `bad event from lineage:${PASSWORD}`);
    const run = await runCli(
      ['backfill', ...RANGE, '--openlineage-url', endpointUrl(), '--openlineage-namespace', 'nightly'],
      cliEnv(sim, db.url, { POST_REPORTS_SCHEMA: 'lineage_refused' }),
    );
    endpoint.answerWith(200);
    expect(run.code, run.stderr).toBe(0);
    const warnings = run.stderr.split('\n').filter((line) => line.includes('OpenLineage endpoint'));
    expect(warnings).toEqual(
      ['START', 'COMPLETE'].map(
        (type) =>
          `post-reports-etl: warning: cannot send the ${type} event to the OpenLineage endpoint ${endpoint.url}: answered 400: bad event from lineage:[redacted]`,
      ),
    );
    const last = JSON.parse(endpoint.pushes.at(-1)!.body) as Event;
    expect(last.job).toEqual({ namespace: 'nightly', name: 'backfill.lineage_refused.default' });
  });
});
