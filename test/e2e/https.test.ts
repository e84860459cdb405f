/*
 * The built CLI against the simulator over HTTPS, its certificate issued by a CA the test makes and the CLI trusts
 * through NODE_EXTRA_CA_CERTS, as a private CA is trusted in production: the load is exact. Without the CA the run
 * stops on the certificate, naming it, and loads nothing.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { type RunningSimulator, startSimulator } from '../../src/simulator/server.js';
import { runCli } from '../helpers/cli.js';
import { createTestDatabase } from '../helpers/database.js';
import { cliEnv } from '../helpers/e2e-env.js';
import { compareWithReference } from '../helpers/reference-check.js';
import { testCa } from '../helpers/test-ca.js';

const db = await createTestDatabase();
const ca = testCa();
const sim: RunningSimulator = await startSimulator({
  seed: 71,
  postsPerDay: 40,
  pageSize: 150,
  tls: { key: ca.serverKey, cert: ca.serverCert },
});
afterAll(() => sim.close());

const FROM = '2025-06-02';
const TO = '2025-06-15';
const args = (schema: string) => [
  'backfill',
  '--from',
  FROM,
  '--to',
  TO,
  '--window-days',
  '7',
  '--schema',
  schema,
];

describe('the CLI over HTTPS', () => {
  it('loads exactly from an https:// base URL whose CA it is told to trust', async () => {
    expect(sim.baseUrl).toMatch(/^https:/);
    const result = await runCli(args('over_tls'), cliEnv(sim, db.url, { NODE_EXTRA_CA_CERTS: ca.caFile }));
    expect(result.code, result.stderr.slice(-2000)).toBe(0);
    expect(result.summary).toMatchObject({ status: 'succeeded', exitCode: 0 });
    const reference = sim.referencePosts({ start_date: FROM, end_date: TO });
    expect(reference.length).toBeGreaterThan(150);
    expect((await compareWithReference(db.pool, 'over_tls', reference)).problems).toEqual([]);
  });

  it('stops on a certificate it cannot verify, naming why, and sends no request', async () => {
    const before = sim.stats().requests;
    const result = await runCli(args('untrusted'), cliEnv(sim, db.url, { POST_REPORTS_MAX_ATTEMPTS: '1' }));
    expect(result.code, result.stderr.slice(-2000)).not.toBe(0);
    expect(result.stderr).toMatch(/unable to verify the first certificate/);
    expect(sim.stats().requests).toBe(before);
  });
});
