import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type RunningSimulator, startSimulator } from '../../../src/simulator/server.js';
import { runCli } from '../../helpers/cli.js';
import { createTestDatabase } from '../../helpers/database.js';
import { cliEnv } from '../../helpers/e2e-env.js';
import { type ForwardProxy, startForwardProxy } from '../../helpers/forward-proxy.js';
import { compareWithReference } from '../../helpers/reference-check.js';
import { makeTestCa, type TestCa } from '../../helpers/test-ca.js';
import { startTlsFront, type TlsFront } from '../../helpers/tls-front.js';
import { testNow } from '../../helpers/today.js';

const db = await createTestDatabase();
/** A name no resolver knows: only the proxy maps it (to 127.0.0.1), as a company's internal API host. */
const INTERNAL = 'api.internal.test';
const PASSWORD = 'pr0xy-s3cret';
const WEEK = { from: '2026-03-02', to: '2026-03-08' };
let sim: RunningSimulator;
let ca: TestCa;
let front: TlsFront;
let gateway: TlsFront;
const proxies: ForwardProxy[] = [];

beforeAll(async () => {
  sim = await startSimulator({ seed: 7, postsPerDay: 6, now: testNow() });
  ca = makeTestCa([INTERNAL]);
  const port = Number(new URL(sim.baseUrl).port);
  front = await startTlsFront(port, { cert: ca.serverCert, key: ca.serverKey });
  const { readFileSync } = await import('node:fs');
  gateway = await startTlsFront(port, {
    cert: ca.serverCert,
    key: ca.serverKey,
    requireClientCa: readFileSync(ca.caFile, 'utf8'),
  });
});
afterAll(async () => {
  for (const proxy of proxies) await proxy.close();
  await front.close();
  await gateway.close();
  await sim.close();
  ca.remove();
});

async function proxy(): Promise<ForwardProxy> {
  const started = await startForwardProxy({
    credentials: { user: 'etl', password: PASSWORD },
    hosts: [INTERNAL],
  });
  proxies.push(started);
  return started;
}

function backfill(schema: string, env: Record<string, string>) {
  return runCli(
    ['backfill', '--from', WEEK.from, '--to', WEEK.to, '--schema', schema],
    cliEnv(sim, db.url, env),
  );
}

/** The error lines of stderr. */
function errors(stderr: string): string[] {
  return stderr.split('\n').filter((line) => line.startsWith('post-reports-etl: error: '));
}

async function exact(schema: string): Promise<void> {
  const reference = sim.referencePosts({ start_date: WEEK.from, end_date: WEEK.to });
  const check = await compareWithReference(db.pool, schema, reference);
  expect(check.problems).toEqual([]);
  expect(check.posts).toBe(reference.length);
}

describe('behind a forward proxy (the built CLI)', () => {
  it('reaches an API only the proxy resolves, in CONNECT tunnels kept alive, its password in no output', async () => {
    const through = await proxy();
    const result = await backfill('proxied', {
      POST_REPORTS_BASE_URL: front.urlFor(sim.baseUrl, INTERNAL),
      HTTPS_PROXY: through.url,
      NODE_EXTRA_CA_CERTS: ca.caFile,
    });
    expect(result.code, result.stderr).toBe(0);
    await exact('proxied');
    expect(through.connects.length).toBeGreaterThan(0);
    expect(new Set(through.connects)).toEqual(new Set([`${INTERNAL}:${front.port}`]));
    // Connections are used again: far fewer tunnels than requests.
    expect(through.connects.length).toBeLessThan(sim.stats().requests / 2);
    expect(`${result.stdout}${result.stderr}`).not.toContain(PASSWORD);
  });

  it('reaches a host NO_PROXY names directly, and so with POST_REPORTS_API_PROXY=off', async () => {
    const bypassed = await proxy();
    const listed = await backfill('bypass_listed', {
      POST_REPORTS_BASE_URL: front.urlFor(sim.baseUrl, 'localhost'),
      https_proxy: bypassed.url,
      NO_PROXY: 'example.com, .localhost',
      NODE_EXTRA_CA_CERTS: ca.caFile,
    });
    expect(listed.code, listed.stderr).toBe(0);
    const off = await backfill('bypass_off', {
      POST_REPORTS_BASE_URL: front.urlFor(sim.baseUrl, 'localhost'),
      HTTPS_PROXY: bypassed.url,
      POST_REPORTS_API_PROXY: 'off',
      NODE_EXTRA_CA_CERTS: ca.caFile,
    });
    expect(off.code, off.stderr).toBe(0);
    expect(bypassed.connects).toEqual([]);
    expect(bypassed.requests).toEqual([]);
    await exact('bypass_listed');
  });

  it('a 407 is one line naming the proxy without its password, exit 2, not retried', async () => {
    const strict = await proxy();
    const wrong = new URL(strict.url);
    wrong.password = 'not-the-password';
    const result = await backfill('refused', {
      POST_REPORTS_BASE_URL: front.urlFor(sim.baseUrl, INTERNAL),
      HTTPS_PROXY: wrong.toString(),
      NODE_EXTRA_CA_CERTS: ca.caFile,
    });
    expect(result.code, result.stderr).toBe(2);
    expect(strict.connects).toHaveLength(1);
    const lines = errors(result.stderr);
    expect(lines).toHaveLength(1);
    expect(lines[0]).toContain(`the proxy http://127.0.0.1:${strict.port} (HTTPS_PROXY) answered 407`);
    expect(`${result.stdout}${result.stderr}`).not.toContain('not-the-password');
    expect(result.summary).toMatchObject({ exitCode: 2 });
  });

  it("a proxy's 503 to CONNECT is retried", async () => {
    const busy = await proxy();
    busy.refuseNext(2, 503);
    const result = await backfill('proxy_busy', {
      POST_REPORTS_BASE_URL: front.urlFor(sim.baseUrl, INTERNAL),
      HTTPS_PROXY: busy.url,
      NODE_EXTRA_CA_CERTS: ca.caFile,
    });
    expect(result.code, result.stderr).toBe(0);
    expect(result.summary).toMatchObject({ retries: 2 });
    await exact('proxy_busy');
  });

  it('sends http:// in absolute form to HTTP_PROXY (with --allow-http)', async () => {
    const plain = await proxy();
    const url = new URL(sim.baseUrl);
    const result = await backfill('absolute_form', {
      POST_REPORTS_BASE_URL: `http://${INTERNAL}:${url.port}${url.pathname}`,
      POST_REPORTS_ALLOW_HTTP: 'true',
      http_proxy: plain.url,
    });
    expect(result.code, result.stderr).toBe(0);
    expect(plain.connects).toEqual([]);
    expect(plain.requests.length).toBeGreaterThan(0);
    expect(plain.requests.every((target) => target.startsWith(`http://${INTERNAL}:${url.port}/v4/`))).toBe(
      true,
    );
    await exact('absolute_form');
  });
});

describe("TLS the connector cannot verify, or that wants the connector's certificate (the built CLI)", () => {
  it('an unknown CA is exit 2 at the first attempt: one line naming the host, the reason and the fix', async () => {
    const before = front.connections();
    const result = await backfill('untrusted', {
      POST_REPORTS_BASE_URL: front.urlFor(sim.baseUrl, 'localhost'),
    });
    expect(result.code, result.stderr).toBe(2);
    expect(front.connections() - before).toBe(1);
    const lines = errors(result.stderr);
    expect(lines).toHaveLength(1);
    expect(lines[0]).toContain(`the certificate of localhost:${front.port} cannot be verified`);
    expect(lines[0]).toContain('unable to verify the first certificate');
    expect(lines[0]).toContain('NODE_EXTRA_CA_CERTS');
    expect(lines[0]).toContain('POST_REPORTS_API_CA_FILE');
    expect(result.stderr).not.toContain('retrying');
  });

  it('the CA of POST_REPORTS_API_CA_FILE is trusted for the API', async () => {
    const result = await backfill('ca_file', {
      POST_REPORTS_BASE_URL: front.urlFor(sim.baseUrl, 'localhost'),
      POST_REPORTS_API_CA_FILE: ca.caFile,
    });
    expect(result.code, result.stderr).toBe(0);
    await exact('ca_file');
  });

  it('a gateway that requires a client certificate: exit 2 without one, exact with one (its key encrypted)', async () => {
    const base = {
      POST_REPORTS_BASE_URL: gateway.urlFor(sim.baseUrl, 'localhost'),
      POST_REPORTS_API_CA_FILE: ca.caFile,
    };
    const before = gateway.connections();
    const without = await backfill('no_client_cert', base);
    expect(without.code, without.stderr).toBe(2);
    expect(gateway.connections() - before).toBe(1);
    const lines = errors(without.stderr);
    expect(lines).toHaveLength(1);
    expect(lines[0]).toContain('POST_REPORTS_API_CLIENT_CERT_FILE');

    const shown = await backfill('client_cert', {
      ...base,
      POST_REPORTS_API_CLIENT_CERT_FILE: ca.clientCertFile,
      POST_REPORTS_API_CLIENT_KEY_FILE: ca.clientKeyFile,
      POST_REPORTS_API_CLIENT_KEY_PASSPHRASE_FILE: ca.clientPassphraseFile,
    });
    expect(shown.code, shown.stderr).toBe(0);
    await exact('client_cert');
  });
});
