import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ApiError } from '../../../src/errors.js';
import { type RunningSimulator, startSimulator } from '../../../src/simulator/server.js';
import { type ForwardProxy, startForwardProxy } from '../../helpers/forward-proxy.js';
import { makeTestCa, type TestCa } from '../../helpers/test-ca.js';
import { startTlsFront, type TlsFront } from '../../helpers/tls-front.js';
import { clientFor, failure } from '../extract/harness.js';

const INTERNAL = 'api.internal.test';
/** Another name the proxy maps to the same server, which its certificate is not for. */
const ELSEWHERE = 'other.internal.test';
const PASSWORD = 'tunnel-s3cret';
let sim: RunningSimulator;
let ca: TestCa;
let front: TlsFront;
let proxy: ForwardProxy;

beforeAll(async () => {
  sim = await startSimulator({ seed: 3, postsPerDay: 2 });
  ca = makeTestCa([INTERNAL]);
  front = await startTlsFront(Number(new URL(sim.baseUrl).port), { cert: ca.serverCert, key: ca.serverKey });
  proxy = await startForwardProxy({
    credentials: { user: 'etl', password: PASSWORD },
    hosts: [INTERNAL, ELSEWHERE],
  });
});
afterAll(async () => {
  await proxy.close();
  await front.close();
  await sim.close();
  ca.remove();
});

function tunnelled(proxyUrl = proxy.url) {
  return clientFor(
    { baseUrl: front.urlFor(sim.baseUrl, INTERNAL), token: sim.token },
    { HTTPS_PROXY: proxyUrl, POST_REPORTS_API_CA_FILE: ca.caFile },
  );
}

describe('the API client through a forward proxy', () => {
  it('keeps its tunnel alive from one request to the next', async () => {
    const { client } = tunnelled();
    const before = proxy.connects.length;
    for (let i = 0; i < 5; i++) await client.getJson('reports/posts/dimensions');
    expect(proxy.connects.length - before).toBe(1);
  });

  it('retries a tunnel dropped before the answer, and a 502, naming the proxy without its password', async () => {
    const { client, retries, lines } = tunnelled();
    proxy.refuseNext(1, 'drop');
    await client.getJson('reports/posts/dimensions');
    // A new client: the first one's tunnel is kept alive, and would be used again.
    const other = tunnelled();
    proxy.refuseNext(1, 502);
    await other.client.getJson('reports/posts/dimensions');
    const all = [...retries, ...other.retries];
    expect(all.map((retry) => retry.error.code)).toEqual(['API_NETWORK_ERROR', 'API_NETWORK_ERROR']);
    expect(all[0]?.error.message).toContain(`the proxy http://127.0.0.1:${proxy.port} (HTTPS_PROXY)`);
    expect(all[1]?.error.message).toContain('answered 502 to CONNECT');
    expect([...lines, ...other.lines].join('\n')).not.toContain(PASSWORD);
  });

  it('a 403 is PROXY_REFUSED at once, never retried', async () => {
    const { client, retries } = tunnelled();
    proxy.refuseNext(1, 403);
    const error = await failure(() => client.getJson('reports/posts/dimensions'));
    expect(error).toBeInstanceOf(ApiError);
    expect(error).toMatchObject({ code: 'PROXY_REFUSED', final: true });
    expect(error.message).toContain(`answered 403 to CONNECT ${INTERNAL}:${front.port}`);
    expect(retries).toEqual([]);
  });

  it('a 407 to an http:// request in absolute form is PROXY_REFUSED too', async () => {
    const url = new URL(sim.baseUrl);
    const wrong = new URL(proxy.url);
    wrong.password = 'wrong-one';
    const { client, retries } = clientFor(
      { baseUrl: `http://${INTERNAL}:${url.port}${url.pathname}`, token: sim.token },
      { HTTP_PROXY: wrong.toString(), POST_REPORTS_ALLOW_HTTP: 'true' },
    );
    const error = await failure(() => client.getJson('reports/posts/dimensions'));
    expect(error).toMatchObject({ code: 'PROXY_REFUSED' });
    expect(error.message).toContain(`the proxy http://127.0.0.1:${proxy.port} (HTTP_PROXY) answered 407`);
    expect(error.message).not.toContain('wrong-one');
    expect(retries).toEqual([]);
  });

  it('a certificate for another name is API_CERTIFICATE_UNTRUSTED at the first attempt, naming the host', async () => {
    const { client, retries } = clientFor(
      { baseUrl: front.urlFor(sim.baseUrl, ELSEWHERE), token: sim.token },
      { HTTPS_PROXY: proxy.url, POST_REPORTS_API_CA_FILE: ca.caFile },
    );
    const error = await failure(() => client.getJson('reports/posts/dimensions'));
    expect(error).toMatchObject({ code: 'API_CERTIFICATE_UNTRUSTED', final: true });
    expect(error.message).toContain(`the certificate of ${ELSEWHERE}:${front.port} is not for that name`);
    expect(error.message).toContain('ERR_TLS_CERT_ALTNAME_INVALID');
    expect(retries).toEqual([]);
  });

  it('a proxy that cannot be reached is a network error, retried', async () => {
    const gone = await startForwardProxy();
    const port = gone.port;
    await gone.close();
    const { client, retries } = tunnelled(`http://127.0.0.1:${port}`);
    const error = await failure(() => client.getJson('reports/posts/dimensions'));
    expect(error).toMatchObject({ code: 'API_NETWORK_ERROR' });
    expect(error.message).toContain(`the proxy http://127.0.0.1:${port} (HTTPS_PROXY) could not be reached`);
    expect(retries.length).toBe(3);

    const url = new URL(sim.baseUrl);
    const plain = clientFor(
      { baseUrl: `http://${INTERNAL}:${url.port}${url.pathname}`, token: sim.token },
      { HTTP_PROXY: `http://127.0.0.1:${port}`, POST_REPORTS_ALLOW_HTTP: 'true' },
    );
    const absolute = await failure(() => plain.client.getJson('reports/posts/dimensions'));
    expect(absolute).toMatchObject({ code: 'API_NETWORK_ERROR' });
    expect(absolute.message).toContain(
      `the proxy http://127.0.0.1:${port} (HTTP_PROXY) could not be reached`,
    );
  });
});
