/*
 * --pushgateway-url: the end of every run pushes the metrics the metrics file holds to a Prometheus Pushgateway (a
 * stand-in HTTP server here), under the grouping key job/schema/organization, with the URL's credentials as Basic
 * authorization and never in any output; a run that failed keeps the last success pushed (POST, not PUT); a
 * Pushgateway that refuses or cannot be reached is a warning, and the run's exit code is its own; the proxy the
 * environment names for the Pushgateway's host carries the push.
 */
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type RunningSimulator, startSimulator } from '../../../src/simulator/server.js';
import { runCli } from '../../helpers/cli.js';
import { createTestDatabase } from '../../helpers/database.js';
import { cliEnv } from '../../helpers/e2e-env.js';
import { startForwardProxy } from '../../helpers/forward-proxy.js';
import { freePort } from '../../helpers/free-port.js';
import { type MetricFamily, parsePrometheusText } from '../../helpers/prometheus-text.js';
import { type RecordingServer, startRecordingServer } from '../../helpers/recording-server.js';
import { summaryOf } from '../../helpers/summary.js';

const db = await createTestDatabase();
let sim: RunningSimulator;
let gateway: RecordingServer;
let dir: string;

const PASSWORD = 'pg-s3cret/word';
const RANGE = ['--from', '2026-03-02', '--to', '2026-03-22', '--window-days', '7'];

beforeAll(async () => {
  sim = await startSimulator({ seed: 47, postsPerDay: 20 });
  gateway = await startRecordingServer();
  dir = await mkdtemp(join(tmpdir(), 'pushgateway-'));
});
afterAll(async () => {
  await sim.close();
  await gateway.close();
  await rm(dir, { recursive: true, force: true });
});

/** The URL with the stand-in's credentials: the password percent-encoded, as a URL carries it. */
function gatewayUrl(base = gateway.url): string {
  const url = new URL(base);
  url.username = 'pusher';
  url.password = encodeURIComponent(PASSWORD);
  return url.toString();
}

/** Each sample as `name{labels} value`, sorted: what two metric texts are compared by. */
function samples(families: readonly MetricFamily[], leaveOut: readonly string[] = []): string[] {
  return families
    .flatMap((family) =>
      family.metrics.map((m) => {
        const labels = Object.entries(m.labels ?? {})
          .filter(([k]) => !leaveOut.includes(k))
          .map(([k, v]) => `${k}=${v}`)
          .join(',');
        return `${family.type} ${family.name}{${labels}} ${Number(m.value)}`;
      }),
    )
    .sort();
}

function names(families: readonly MetricFamily[]): string[] {
  return families.map((f) => f.name).sort();
}

describe('--pushgateway-url (the built CLI)', () => {
  it('pushes what the metrics file holds, grouped by schema and organization, and keeps the last success after a failure', async () => {
    const path = join(dir, 'pushed.prom');
    const env = cliEnv(sim, db.url, {
      POST_REPORTS_SCHEMA: 'pushed',
      POST_REPORTS_PUSHGATEWAY_URL: gatewayUrl(),
    });
    const ok = await runCli(['backfill', ...RANGE, '--metrics-file', path], env);
    expect(ok.code, ok.stderr).toBe(0);
    expect(gateway.pushes).toHaveLength(1);
    const push = gateway.pushes[0]!;
    expect(push.method).toBe('PUT');
    expect(push.path).toBe('/metrics/job/post_reports_etl/schema/pushed/organization/default');
    expect(push.authorization).toBe(`Basic ${Buffer.from(`pusher:${PASSWORD}`).toString('base64')}`);
    expect(push.contentType).toMatch(/^text\/plain; version=0\.0\.4/);
    const pushed = parsePrometheusText(push.body);
    const file = parsePrometheusText(await readFile(path, 'utf8'));
    // The same metrics, the grouping key's labels in the URL rather than on each sample.
    expect(samples(pushed)).toEqual(samples(file, ['schema', 'organization']));
    for (const family of pushed) {
      for (const m of family.metrics) expect(Object.keys(m.labels ?? {})).not.toContain('schema');
    }
    const summary = summaryOf(ok);
    const rows = pushed.find((f) => f.name === 'post_reports_last_run_rows');
    expect(Number(rows?.metrics[0]?.value)).toBe(summary.posts);
    expect(names(pushed)).toContain('post_reports_last_success_timestamp_seconds');
    // The password, in any form, is in no output.
    for (const text of [ok.stdout, ok.stderr]) {
      expect(text).not.toContain('s3cret');
      expect(text).not.toContain(encodeURIComponent(PASSWORD));
    }

    // A window the API refuses: exit 3; the push replaces only the metrics the run reports, so the Pushgateway
    // keeps the last success of the run before.
    sim.refuseReports(['2026-03-09'], 'segment value no longer exists');
    const failed = await runCli(['backfill', ...RANGE, '--reload'], env);
    sim.refuseReports([]);
    expect(failed.code, failed.stderr).toBe(3);
    const again = gateway.pushes[1]!;
    expect(again.method).toBe('POST');
    expect(again.path).toBe(push.path);
    const families = parsePrometheusText(again.body);
    expect(names(families)).not.toContain('post_reports_last_success_timestamp_seconds');
    const exit = families.find((f) => f.name === 'post_reports_last_run_exit_code');
    expect(Number(exit?.metrics[0]?.value)).toBe(3);
  });

  it('warns, without the password, when the Pushgateway refuses or cannot be reached: the exit code is the run’s', async () => {
    gateway.answerWith(500, `storage full for pusher:${PASSWORD}`);
    const refused = await runCli(
      ['backfill', ...RANGE],
      cliEnv(sim, db.url, {
        POST_REPORTS_SCHEMA: 'push_refused',
        POST_REPORTS_PUSHGATEWAY_URL: gatewayUrl(),
      }),
    );
    gateway.answerWith(200);
    expect(refused.code, refused.stderr).toBe(0);
    const warning = refused.stderr.split('\n').filter((l) => l.includes('cannot push the metrics'));
    expect(warning).toEqual([
      `post-reports-etl: warning: cannot push the metrics to the Pushgateway ${gateway.url}: answered 500: storage full for pusher:[redacted]`,
    ]);
    expect(refused.stderr).not.toContain('s3cret');

    const closed = `http://127.0.0.1:${await freePort()}`;
    const unreachable = await runCli(
      ['backfill', ...RANGE],
      cliEnv(sim, db.url, {
        POST_REPORTS_SCHEMA: 'push_unreachable',
        POST_REPORTS_PUSHGATEWAY_URL: gatewayUrl(closed),
      }),
    );
    expect(unreachable.code, unreachable.stderr).toBe(0);
    expect(unreachable.stderr).toMatch(
      new RegExp(
        `post-reports-etl: warning: cannot push the metrics to the Pushgateway ${closed}: .*ECONNREFUSED`,
      ),
    );
    expect(unreachable.stderr).not.toContain('s3cret');
  });

  it('goes through the proxy the environment names for the Pushgateway, whatever POST_REPORTS_API_PROXY says', async () => {
    const proxy = await startForwardProxy({ credentials: { user: 'proxy', password: 'proxy-pass' } });
    try {
      const before = gateway.pushes.length;
      const run = await runCli(
        ['backfill', ...RANGE],
        cliEnv(sim, db.url, {
          POST_REPORTS_SCHEMA: 'push_proxied',
          POST_REPORTS_PUSHGATEWAY_URL: gatewayUrl(),
          HTTP_PROXY: proxy.url,
          POST_REPORTS_API_PROXY: 'off',
        }),
      );
      expect(run.code, run.stderr).toBe(0);
      expect(proxy.requests).toEqual([
        `${gateway.url}/metrics/job/post_reports_etl/schema/push_proxied/organization/default`,
      ]);
      expect(gateway.pushes.slice(before).map((p) => p.method)).toEqual(['PUT']);
      expect(run.stderr).not.toContain('proxy-pass');
    } finally {
      await proxy.close();
    }
  });

  it('pushes each organization of an organizations file to a group of its own, and sends each its lineage', async () => {
    const api = await startSimulator({
      seed: 48,
      organizations: [
        { token: 'token-acme', seed: 3, postsPerDay: 10 },
        { token: 'token-globex', seed: 4, postsPerDay: 10 },
      ],
    });
    try {
      const file = join(dir, 'organizations.json');
      await writeFile(
        file,
        JSON.stringify({
          acme: { POST_REPORTS_BASE_URL: api.baseUrl, POST_REPORTS_TOKEN: 'token-acme' },
          globex: { POST_REPORTS_BASE_URL: api.baseUrl, POST_REPORTS_TOKEN: 'token-globex' },
        }),
        { mode: 0o600 },
      );
      const before = gateway.pushes.length;
      const run = await runCli(
        ['backfill', ...RANGE, '--organizations', file],
        cliEnv(api, db.url, {
          POST_REPORTS_TOKEN: 'token-acme',
          POST_REPORTS_SCHEMA: 'pushed_orgs',
          POST_REPORTS_PUSHGATEWAY_URL: gatewayUrl(),
          POST_REPORTS_OPENLINEAGE_URL: gateway.url,
        }),
      );
      expect(run.code, run.stderr.slice(-2000)).toBe(0);
      const requests = gateway.pushes.slice(before);
      const pushes = requests.filter((p) => p.path.startsWith('/metrics/'));
      expect(pushes.map((p) => `${p.method} ${p.path}`).sort()).toEqual([
        'PUT /metrics/job/post_reports_etl/schema/pushed_orgs/organization/acme',
        'PUT /metrics/job/post_reports_etl/schema/pushed_orgs/organization/globex',
      ]);
      for (const push of pushes) {
        const families = parsePrometheusText(push.body);
        expect(names(families)).toContain('post_reports_last_run_rows');
      }
      const events = requests
        .filter((p) => p.path === '/api/v1/lineage')
        .map((p) => JSON.parse(p.body) as { eventType: string; job: { name: string } });
      expect(events.map((e) => `${e.eventType} ${e.job.name}`).sort()).toEqual([
        'COMPLETE backfill.pushed_orgs.acme',
        'COMPLETE backfill.pushed_orgs.globex',
        'START backfill.pushed_orgs.acme',
        'START backfill.pushed_orgs.globex',
      ]);
    } finally {
      await api.close();
    }
  });

  it('refuses a URL that is no Pushgateway root, in one line naming the setting, before anything runs', async () => {
    const run = await runCli(
      [
        'backfill',
        '--from',
        '2026-03-02',
        '--to',
        '2026-03-08',
        '--pushgateway-url',
        `ftp://pusher:${encodeURIComponent(PASSWORD)}@gw:21`,
      ],
      cliEnv(sim, db.url, { POST_REPORTS_SCHEMA: 'push_bad' }),
    );
    expect(run.code).toBe(2);
    expect(run.stderr).toContain(
      'POST_REPORTS_PUSHGATEWAY_URL (--pushgateway-url) must be http:// or https://, got ftp:',
    );
    expect(run.stderr).not.toContain('s3cret');
  });
});
