import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type RunningSimulator, startSimulator } from '../../../src/simulator/server.js';
import { runCli } from '../../helpers/cli.js';
import { createTestDatabase } from '../../helpers/database.js';
import { cliEnv } from '../../helpers/e2e-env.js';
import { compareWithReference } from '../../helpers/reference-check.js';

const db = await createTestDatabase();
const FROM = '2025-09-01';
const TO = '2025-09-14';
let sim: RunningSimulator;

beforeAll(async () => {
  // Posts without custom_segments, and posts with none, one or two values of a dimension: the spec shows a list.
  sim = await startSimulator({ seed: 180, postsPerDay: 30, variedSegments: true });
});
afterAll(() => sim.close());

async function exact(
  schema: string,
  params: Parameters<RunningSimulator['referencePosts']>[0],
): Promise<void> {
  const reference = sim.referencePosts(params);
  const check = await compareWithReference(db.pool, schema, reference);
  expect(check.problems).toEqual([]);
  expect(check.posts).toBe(reference.length);
}

describe('posts with any number of segment values (the built CLI)', () => {
  it('loads each post with exactly the segment values it has: none, or several of one dimension', async () => {
    const reference = sim.referencePosts({ start_date: FROM, end_date: TO });
    const withoutSegments = reference.filter((post) => !post.text.includes('"custom_segments"'));
    const twoOfOne = reference.filter(
      (post) => post.segments.filter((s) => s.name === 'Region').length === 2,
    );
    expect(withoutSegments.length).toBeGreaterThan(0);
    expect(twoOfOne.length).toBeGreaterThan(0);
    const run = await runCli(
      ['backfill', '--from', FROM, '--to', TO],
      cliEnv(sim, db.url, { POST_REPORTS_SCHEMA: 'varied' }),
    );
    expect(run.code, run.stderr).toBe(0);
    await exact('varied', { start_date: FROM, end_date: TO });
  });

  it('a segment filter selects the posts with that value among theirs', async () => {
    const run = await runCli(
      ['backfill', '--from', FROM, '--to', TO, '--segment', 'Region=North'],
      cliEnv(sim, db.url, { POST_REPORTS_SCHEMA: 'varied_north' }),
    );
    expect(run.code, run.stderr).toBe(0);
    const params = {
      start_date: FROM,
      end_date: TO,
      custom_segments: [{ name: 'Region', values: ['North'] }],
    };
    const reference = sim.referencePosts(params);
    expect(reference.some((post) => post.segments.filter((s) => s.name === 'Region').length === 2)).toBe(
      true,
    );
    expect(
      reference.every((post) => post.segments.some((s) => s.name === 'Region' && s.value === 'North')),
    ).toBe(true);
    await exact('varied_north', params);
  });
});
