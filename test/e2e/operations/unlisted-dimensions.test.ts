import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type RunningSimulator, startSimulator } from '../../../src/simulator/server.js';
import { runCli } from '../../helpers/cli.js';
import { createTestDatabase } from '../../helpers/database.js';
import { cliEnv } from '../../helpers/e2e-env.js';
import { compareWithReference } from '../../helpers/reference-check.js';
import { summaryOf } from '../../helpers/summary.js';

const db = await createTestDatabase();
const FROM = '2026-02-02';
const TO = '2026-02-15';
let sim: RunningSimulator;
let listed: { ad_formats: string[]; content_types: string[] };

async function dimensions(simulator: RunningSimulator): Promise<Record<string, unknown>> {
  const response = await fetch(`${simulator.baseUrl}/reports/posts/dimensions`, {
    headers: { authorization: `Bearer ${simulator.token}` },
  });
  return (await response.json()) as Record<string, unknown>;
}

beforeAll(async () => {
  // The same organization twice: one lists ad formats and content types, the other leaves them out.
  const full = await startSimulator({ seed: 160, postsPerDay: 30 });
  listed = (await dimensions(full)) as typeof listed;
  await full.close();
  sim = await startSimulator({
    seed: 160,
    postsPerDay: 30,
    dimensionsLeftOut: { ad_formats: 'absent', content_types: 'absent' },
  });
});
afterAll(() => sim.close());

describe('dimensions without ad_formats or content_types (the built CLI)', () => {
  it('filters on them all the same, the API being the judge of their values', async () => {
    const served = await dimensions(sim);
    expect(Object.keys(served).sort()).toEqual(['brands', 'channels', 'custom_segments', 'markets']);
    const adFormat = listed.ad_formats[0] ?? '';
    const contentType = listed.content_types[0] ?? '';
    const run = await runCli(
      ['backfill', '--from', FROM, '--to', TO, '--ad-formats', adFormat, '--content-types', contentType],
      cliEnv(sim, db.url, { POST_REPORTS_SCHEMA: 'unlisted' }),
    );
    expect(run.code, run.stderr).toBe(0);
    const reference = sim.referencePosts({
      start_date: FROM,
      end_date: TO,
      ad_formats: [adFormat],
      content_types: [contentType],
    });
    expect(reference.length).toBeGreaterThan(0);
    const check = await compareWithReference(db.pool, 'unlisted', reference);
    expect(check.problems).toEqual([]);
    expect(check.posts).toBe(reference.length);
  });

  it('a value the organization does not have is not refused before asking: the API selects no post for it', async () => {
    const run = await runCli(
      ['backfill', '--from', FROM, '--to', TO, '--ad-formats', 'No Such Format'],
      cliEnv(sim, db.url, { POST_REPORTS_SCHEMA: 'unknown_format' }),
    );
    expect(run.code, run.stderr).toBe(0);
    expect(summaryOf(run)).toMatchObject({ posts: 0, windows: { planned: 2, loaded: 2, failed: 0 } });
    expect(sim.referenceIds({ start_date: FROM, end_date: TO, ad_formats: ['No Such Format'] })).toEqual([]);
    const check = await compareWithReference(db.pool, 'unknown_format', []);
    expect(check.problems).toEqual([]);
  });
});
