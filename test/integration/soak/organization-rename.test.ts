/*
 * The organization soak's checks of a rename (test/soak/organization-state.ts, verify-tables.ts): a rename through
 * the built CLI passes them; a rename that lost a window's rows, left a window's state under the old id, or that the
 * schema did not record, fails them. The ids it renames to are valid and never one used before (organization-plan.ts).
 */
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { isOrganizationId } from '../../../src/model/organization.js';
import { cutWindows } from '../../../src/pipeline/windows.js';
import { Random } from '../../../src/simulator/random.js';
import { type RunningSimulator, startSimulator } from '../../../src/simulator/server.js';
import { runCli } from '../../helpers/cli.js';
import { createTestDatabase } from '../../helpers/database.js';
import { cliEnv } from '../../helpers/e2e-env.js';
import { drawOrganizations, renameTarget } from '../../soak/organization-plan.js';
import { foreignRows, holdings, renameRecords } from '../../soak/organization-state.js';
import { Ledger } from '../../soak/verify-tables.js';

const db = await createTestDatabase();
let sim: RunningSimulator;
const FROM = '2025-05-05';
const TO = '2025-05-25';
const grid = cutWindows(FROM, TO, 7);
const TOKENS = ['token-of-uuid', 'token-of-acme-emea'];
const UUID = '3f2a9c1e-8b7d-4e2f-9a6b-1c2d3e4f5a6b';

beforeAll(async () => {
  sim = await startSimulator({
    seed: 91,
    organizations: TOKENS.map((token, i) => ({ token, seed: 100 + i, postsPerDay: 10 })),
  });
});
afterAll(async () => {
  await sim.close();
});

const env = (token: string) => cliEnv(sim, db.url, { POST_REPORTS_TOKEN: token });
const backfill = (schema: string, org: string, token: string) =>
  runCli(['backfill', '--from', FROM, '--to', TO, '--schema', schema, '--organization', org], env(token));
const rename = (schema: string, from: string, to: string) =>
  runCli(['rename-organization', '--from', from, '--to', to, '--schema', schema], env(TOKENS[0] ?? ''));

/** Two organizations loaded into `schema`: a UUID and acme-emea; the first's ledger, checked. */
async function loaded(schema: string): Promise<Ledger> {
  expect((await backfill(schema, UUID, TOKENS[0] ?? '')).code).toBe(0);
  expect((await backfill(schema, 'acme-emea', TOKENS[1] ?? '')).code).toBe(0);
  const ledger = new Ledger(sim, schema, { from: FROM, to: TO }, grid, {
    org: UUID,
    token: TOKENS[0] ?? '',
    filters: {},
  });
  expect((await ledger.check(db.pool, new Set())).problems).toEqual([]);
  return ledger;
}

describe("the organization soak's checks of a rename", () => {
  it('pass a rename through the CLI: the new id holds what the old held, the other organization is untouched', async () => {
    const ledger = await loaded('renamed');
    const before = await holdings(db.pool, 'renamed', UUID, { asRenamed: true });
    const other = await holdings(db.pool, 'renamed', 'acme-emea');
    expect(before).not.toBe('');
    expect((await rename('renamed', UUID, 'ACME.eu')).code).toBe(0);
    ledger.rename('ACME.eu');
    expect(await holdings(db.pool, 'renamed', 'ACME.eu', { asRenamed: true })).toBe(before);
    expect(await holdings(db.pool, 'renamed', 'acme-emea')).toBe(other);
    expect((await ledger.check(db.pool, new Set())).problems).toEqual([]);
    expect(await foreignRows(db.pool, 'renamed', ['ACME.eu', 'acme-emea'])).toEqual([]);
    expect(await renameRecords(db.pool, 'renamed', [[UUID, 'ACME.eu']])).toEqual([]);
    // The record of renames must hold each rename made, and no other.
    expect(await renameRecords(db.pool, 'renamed', [])).toEqual([
      `organization_renames holds ${JSON.stringify([`${UUID} -> ACME.eu`])}, not the renames made []`,
    ]);
  });

  it('fail a rename that lost a window, or left a window of state under the old id', async () => {
    const ledger = await loaded('half');
    const before = await holdings(db.pool, 'half', UUID, { asRenamed: true });
    expect((await rename('half', UUID, 'Acme-EMEA.v2')).code).toBe(0);
    ledger.rename('Acme-EMEA.v2');
    const window = grid[1];
    await db.pool.query('DELETE FROM half.posts WHERE _org = $1 AND _window_start = $2', [
      'Acme-EMEA.v2',
      window?.start,
    ]);
    expect(await holdings(db.pool, 'half', 'Acme-EMEA.v2', { asRenamed: true })).not.toBe(before);
    expect((await ledger.check(db.pool, new Set())).problems).toEqual([
      `window ${window?.start}..${window?.end} was loaded (epoch 0) but its posts are gone`,
    ]);
    // A window's state still under the old id: no organization's.
    await db.pool.query(
      `INSERT INTO half.report_windows
       SELECT (jsonb_populate_record(NULL::half.report_windows, to_jsonb(r) || jsonb_build_object('org', $1::text))).*
         FROM half.report_windows r WHERE org = $2 AND window_start = $3`,
      [UUID, 'Acme-EMEA.v2', window?.start],
    );
    expect(await foreignRows(db.pool, 'half', ['Acme-EMEA.v2', 'acme-emea'])).toEqual([
      `1 rows of report_windows carry the key ${JSON.stringify(UUID)}, no organization's`,
    ]);
  });
});

describe('the ids the organization soak draws and renames to', () => {
  it('are valid ids, and a rename is never to an id used before', () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 2 ** 31 - 1 }), (seed) => {
        const random = new Random(seed);
        const ids = drawOrganizations(random).map((org) => org.id);
        expect(ids.every(isOrganizationId)).toBe(true);
        expect(new Set(ids).size).toBe(ids.length);
        const used = new Set(ids);
        for (const from of ids) {
          const to = renameTarget(random, from, used);
          expect(isOrganizationId(to)).toBe(true);
          expect(used.has(to) || to === 'default').toBe(false);
          used.add(to);
        }
      }),
      { numRuns: 200 },
    );
  });
});
