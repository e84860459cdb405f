import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { getCACertificates, setDefaultCACertificates } from 'node:tls';

/** The files of a certificate authority a test makes, and of what it signed. */
export interface TestCa {
  /** The CA's certificate (PEM file): what a client must trust. */
  readonly caFile: string;
  /** The server's certificate and key, signed by the CA, for `localhost`, `127.0.0.1` and the names given. */
  readonly serverCert: string;
  readonly serverKey: string;
  /** A client certificate signed by the CA, its key encrypted with the passphrase of `clientPassphraseFile`. */
  readonly clientCertFile: string;
  readonly clientKeyFile: string;
  readonly clientPassphraseFile: string;
  remove(): void;
}

function openssl(dir: string, args: readonly string[]): void {
  execFileSync('openssl', args, { cwd: dir, stdio: ['ignore', 'ignore', 'pipe'] });
}

/**
 * Makes a CA (a company's, say) with openssl, valid from now for two days, and the certificates it signs: EC keys,
 * quick to make.
 */
export function makeTestCa(serverNames: readonly string[] = []): TestCa {
  const dir = mkdtempSync(join(tmpdir(), 'post-reports-ca-'));
  const ec = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes'];
  openssl(dir, [
    'req',
    '-x509',
    ...ec,
    '-keyout',
    'ca.key',
    '-out',
    'ca.pem',
    '-days',
    '2',
    '-subj',
    '/CN=Example Company CA',
    '-addext',
    'basicConstraints=critical,CA:TRUE',
    '-addext',
    'keyUsage=critical,keyCertSign,cRLSign',
  ]);
  const sign = (name: string, subject: string, extensions: string): void => {
    openssl(dir, ['req', ...ec, '-keyout', `${name}.key`, '-out', `${name}.csr`, '-subj', subject]);
    writeFileSync(join(dir, `${name}.ext`), extensions);
    openssl(dir, [
      'x509',
      '-req',
      '-in',
      `${name}.csr`,
      '-CA',
      'ca.pem',
      '-CAkey',
      'ca.key',
      '-CAcreateserial',
      '-out',
      `${name}.pem`,
      '-days',
      '2',
      '-extfile',
      `${name}.ext`,
    ]);
  };
  const names = ['localhost', ...serverNames].map((n) => `DNS:${n}`);
  sign(
    'server',
    '/CN=localhost',
    `subjectAltName=${[...names, 'IP:127.0.0.1'].join(',')}\nextendedKeyUsage=serverAuth\n`,
  );
  sign('client', '/CN=post-reports-etl', 'extendedKeyUsage=clientAuth\n');
  writeFileSync(join(dir, 'client.passphrase'), 'a passphrase of the test\n');
  openssl(dir, [
    'pkcs8',
    '-topk8',
    '-in',
    'client.key',
    '-out',
    'client-encrypted.key',
    '-passout',
    'file:client.passphrase',
    '-v2',
    'aes-256-cbc',
  ]);
  return {
    caFile: join(dir, 'ca.pem'),
    serverCert: readFileSync(join(dir, 'server.pem'), 'utf8'),
    serverKey: readFileSync(join(dir, 'server.key'), 'utf8'),
    clientCertFile: join(dir, 'client.pem'),
    clientKeyFile: join(dir, 'client-encrypted.key'),
    clientPassphraseFile: join(dir, 'client.passphrase'),
    remove: () => rmSync(dir, { recursive: true, force: true }),
  };
}

let shared: TestCa | undefined;

/** One CA for the whole process (made on the first call, removed at its exit): what a simulator over TLS serves. */
export function testCa(): TestCa {
  if (shared === undefined) {
    const made = makeTestCa();
    process.once('exit', () => made.remove());
    shared = made;
  }
  return shared;
}

/**
 * Makes this process's TLS clients trust the process's test CA besides the usual ones, as NODE_EXTRA_CA_CERTS does
 * for a process started with it: an https.Agent created afterwards without its own `ca` verifies against them.
 */
export function trustTestCa(): TestCa {
  const ca = testCa();
  const pem = readFileSync(ca.caFile, 'utf8');
  const current = getCACertificates('default');
  if (!current.includes(pem)) setDefaultCACertificates([...current, pem]);
  return ca;
}
