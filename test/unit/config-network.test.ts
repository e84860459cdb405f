import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { parseConfig } from '../../src/config.js';
import { ConfigError } from '../../src/errors.js';

const base = {
  POST_REPORTS_BASE_URL: 'https://api.example.com/v4',
  POST_REPORTS_TOKEN: 'tok-123',
  DATABASE_URL: 'postgres://postgres@127.0.0.1:5432/postgres',
};
const dir = mkdtempSync(join(tmpdir(), 'post-reports-config-network-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function problems(env: Record<string, string>): string {
  try {
    parseConfig({ ...base, ...env });
  } catch (error) {
    expect(error).toBeInstanceOf(ConfigError);
    return (error as Error).message;
  }
  throw new Error('expected a ConfigError');
}

describe('the proxy of the API, from the environment', () => {
  it('takes HTTPS_PROXY for https://, its credentials only as a Basic Proxy-Authorization', () => {
    const { proxy } = parseConfig({ ...base, HTTPS_PROXY: 'http://etl:p%40ss@proxy.corp:3128' }).api;
    expect(proxy).toMatchObject({ origin: 'http://proxy.corp:3128', host: 'proxy.corp', port: 3128 });
    expect(proxy?.source).toBe('HTTPS_PROXY');
    expect(proxy?.authorization?.reveal()).toBe(`Basic ${Buffer.from('etl:p@ss').toString('base64')}`);
    expect(JSON.stringify(proxy)).not.toContain('p%40ss');
    expect(JSON.stringify(proxy)).not.toContain(Buffer.from('etl:p@ss').toString('base64'));
  });

  it('the lower-case variable wins; HTTP_PROXY is for http:// only; a proxy without a scheme is http://', () => {
    const both = parseConfig({ ...base, HTTPS_PROXY: 'http://upper:1', https_proxy: 'lower:3128' }).api.proxy;
    expect(both).toMatchObject({ origin: 'http://lower:3128', source: 'https_proxy' });
    expect(both?.authorization).toBeUndefined();
    expect(parseConfig({ ...base, HTTP_PROXY: 'http://p:1' }).api.proxy).toBeUndefined();
    const plain = { ...base, POST_REPORTS_BASE_URL: 'http://127.0.0.1:8080/v4' };
    expect(parseConfig({ ...plain, HTTP_PROXY: 'http://p:8000' }).api.proxy?.origin).toBe('http://p:8000');
    expect(parseConfig({ ...plain, HTTPS_PROXY: 'http://p:8000' }).api.proxy).toBeUndefined();
  });

  it('NO_PROXY and POST_REPORTS_API_PROXY=off reach the API directly', () => {
    const env = { ...base, HTTPS_PROXY: 'http://proxy.corp:3128' };
    expect(parseConfig({ ...env, NO_PROXY: '.example.com' }).api.proxy).toBeUndefined();
    expect(parseConfig({ ...env, no_proxy: 'other.test' }).api.proxy).toBeDefined();
    expect(parseConfig({ ...env, POST_REPORTS_API_PROXY: 'off' }).api.proxy).toBeUndefined();
    expect(problems({ ...env, POST_REPORTS_API_PROXY: 'none' })).toContain(
      'POST_REPORTS_API_PROXY must be environment or off, got "none"',
    );
    expect(problems({ ...env, NO_PROXY: '10.0.0.0/40' })).toContain(
      'NO_PROXY: 10.0.0.0/40 is not a CIDR range',
    );
  });

  it('refuses a proxy it cannot speak to, naming it without its password', () => {
    const message = problems({ HTTPS_PROXY: 'socks5://etl:hunter2@proxy.corp:1080' });
    expect(message).toContain('HTTPS_PROXY names a socks5 proxy (socks5://proxy.corp:1080)');
    expect(message).not.toContain('hunter2');
    expect(problems({ HTTPS_PROXY: 'http://etl:hunter2@[bad' })).not.toContain('hunter2');
  });
});

describe('TLS of the API', () => {
  const pem = (name: string, text: string) => {
    const path = join(dir, name);
    writeFileSync(path, text);
    return path;
  };
  execFileSync(
    'openssl',
    [
      'req',
      '-x509',
      '-newkey',
      'ec',
      '-pkeyopt',
      'ec_paramgen_curve:prime256v1',
      '-nodes',
      '-keyout',
      'k.pem',
      '-out',
      'c.pem',
      '-days',
      '1',
      '-subj',
      '/CN=client',
    ],
    { cwd: dir, stdio: 'ignore' },
  );
  execFileSync('openssl', ['pkcs8', '-topk8', '-in', 'k.pem', '-out', 'enc.pem', '-passout', 'pass:right'], {
    cwd: dir,
    stdio: 'ignore',
  });
  const cert = join(dir, 'c.pem');

  it('reads a CA file, and names one that holds no certificate', () => {
    expect(parseConfig({ ...base, POST_REPORTS_API_CA_FILE: cert }).api.tls?.ca?.pem).toContain(
      'BEGIN CERTIFICATE',
    );
    expect(problems({ POST_REPORTS_API_CA_FILE: pem('nothing.pem', 'hello\n') })).toContain(
      'POST_REPORTS_API_CA_FILE: ',
    );
    expect(problems({ POST_REPORTS_API_CA_FILE: join(dir, 'missing.pem') })).toContain('no such file');
  });

  it('a client certificate needs its key, and an encrypted key its passphrase', () => {
    expect(problems({ POST_REPORTS_API_CLIENT_CERT_FILE: cert })).toContain(
      'POST_REPORTS_API_CLIENT_CERT_FILE and POST_REPORTS_API_CLIENT_KEY_FILE go together',
    );
    const keyed = {
      POST_REPORTS_API_CLIENT_CERT_FILE: cert,
      POST_REPORTS_API_CLIENT_KEY_FILE: join(dir, 'enc.pem'),
    };
    expect(problems(keyed)).toContain(
      'the key is encrypted and no POST_REPORTS_API_CLIENT_KEY_PASSPHRASE_FILE is set',
    );
    const wrong = { ...keyed, POST_REPORTS_API_CLIENT_KEY_PASSPHRASE_FILE: pem('wrong', 'wrong\n') };
    expect(problems(wrong)).toContain('does not open it');
    expect(problems(wrong)).not.toContain('wrong\n');
    const right = { ...keyed, POST_REPORTS_API_CLIENT_KEY_PASSPHRASE_FILE: pem('right', 'right\n') };
    const client = parseConfig({ ...base, ...right }).api.tls?.client;
    expect(client?.passphrase?.reveal()).toBe('right');
    expect(JSON.stringify(client)).not.toContain('PRIVATE KEY');
  });
});
