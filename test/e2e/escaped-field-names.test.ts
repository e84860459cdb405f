import { afterAll, describe, expect, it } from 'vitest';
import { startSimulator } from '../../src/simulator/server.js';
import { runCli } from '../helpers/cli.js';
import { createTestDatabase } from '../helpers/database.js';
import { cliEnv } from '../helpers/e2e-env.js';
import { compareWithReference } from '../helpers/reference-check.js';

/*
 * Field names are free text, so the API may send names that JSON must escape. On Node 24, V8's JSON.parse can
 * return a wrong key once it has parsed another escaped one in the same place: every post of the first week
 * carries a field named \ and every post of the second week one named " (right after the post id), in pages parsed
 * one after the other, and JSON.parse gives some of the second week's posts the key \. The built CLI, on the Node
 * running this test, must load both exactly.
 */

const extraFields: Record<string, Record<string, string>> = {};
for (let day = 2; day <= 15; day += 1) {
  const date = `2025-06-${String(day).padStart(2, '0')}`;
  extraFields[date] =
    day <= 8 ? { '\\': '1.25' } : { '"': '2.50', ...(day === 10 ? { 'tab\there': '-0.001' } : {}) };
}
const db = await createTestDatabase();
const sim = await startSimulator({ seed: 52, postsPerDay: 4, extraFields });
afterAll(() => sim.close());

describe(`field names written with escapes (the built CLI, Node ${process.versions.node})`, () => {
  it('loads every such field into its own column with its exact value', async () => {
    const result = await runCli(
      ['backfill', '--from', '2025-06-02', '--to', '2025-06-15', '--schema', 'escaped', '--concurrency', '1'],
      cliEnv(sim, db.url),
    );
    expect(result.code, result.stderr.slice(-1500)).toBe(0);
    const reference = sim.referencePosts({ start_date: '2025-06-02', end_date: '2025-06-15' });
    expect((await compareWithReference(db.pool, 'escaped', reference)).problems).toEqual([]);
    const { rows } = await db.pool.query<{ field: string }>(
      `SELECT field FROM escaped.field_columns WHERE field IN ('\\', '"', E'tab\\there')`,
    );
    expect(rows.map((r) => r.field).sort()).toEqual(['"', '\\', 'tab\there']);
  });
});
