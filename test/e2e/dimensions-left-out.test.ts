import { afterAll, describe, expect, it } from 'vitest';
import { startSimulator } from '../../src/simulator/server.js';
import { runCli } from '../helpers/cli.js';
import { createTestDatabase } from '../helpers/database.js';
import { cliEnv } from '../helpers/e2e-env.js';
import { compareWithReference } from '../helpers/reference-check.js';

/*
 * The field notes: the connector must keep working when the service sends less. A dimensions response without
 * brands (and with markets null) loads exactly when no filter needs those lists; a brand filter, which does, ends
 * the run with one line naming the missing list.
 */

const db = await createTestDatabase();
const sim = await startSimulator({
  seed: 11,
  postsPerDay: 3,
  dimensionsLeftOut: { brands: 'absent', markets: 'null', channels: 'absent' },
});
afterAll(() => sim.close());
const WINDOW = { start: '2026-03-02', end: '2026-03-08' };

describe('a dimensions response without some lists (the built CLI)', () => {
  it('loads exactly when no filter needs the lists left out', async () => {
    const result = await runCli(
      [
        'backfill',
        '--from',
        WINDOW.start,
        '--to',
        WINDOW.end,
        '--schema',
        'less',
        '--segment',
        'Region=North',
      ],
      cliEnv(sim, db.url),
    );
    expect(result.code, result.stderr.slice(-1500)).toBe(0);
    const reference = sim.referencePosts({
      start_date: WINDOW.start,
      end_date: WINDOW.end,
      custom_segments: [{ name: 'Region', values: ['North'] }],
    });
    expect(reference.length).toBeGreaterThan(0);
    expect((await compareWithReference(db.pool, 'less', reference)).problems).toEqual([]);
  });

  it('refuses a brand filter in one line naming the missing list', async () => {
    const result = await runCli(
      ['backfill', '--from', WINDOW.start, '--to', WINDOW.end, '--schema', 'branded', '--brands', 'Contoso'],
      cliEnv(sim, db.url),
    );
    expect(result.code).not.toBe(0);
    expect(result.stderr).toMatch(
      /^post-reports-etl: error: .*brands is missing, and the brand filter needs it/m,
    );
  });
});
