import { describe, expect, it } from 'vitest';
import { runCli } from '../helpers/cli.js';
import { createTestDatabase } from '../helpers/database.js';

const db = await createTestDatabase();

describe('demo (the built CLI, loading into DATABASE_URL)', () => {
  it('starts the simulator, backfills 30 days with progress lines, and prints loaded rows', async () => {
    const result = await runCli(['demo', '--progress-interval', '1'], { DATABASE_URL: db.url });
    expect(result.stderr).not.toContain('error:');
    expect(result.code).toBe(0);
    expect(result.stdout).toMatch(
      /Loaded 1500 posts from \d{4}-\d{2}-\d{2} to \d{4}-\d{2}-\d{2} in \d+ windows/,
    );
    expect(result.stdout).toContain('-- A few loaded posts');
    // Five rows of posts with their ids, as the sample query selects them.
    const idRows = result.stdout.split('\n').filter((line) => /^\d{17} \| \d{4}-\d{2}-\d{2}\s+\|/.test(line));
    expect(idRows.length).toBe(5);
    expect(result.stdout).toContain('Pre-Flight');
    expect(result.stdout).toContain('A query to try');
    // Not a terminal: progress arrives as structured log lines.
    const progress = result.stderr
      .split('\n')
      .filter((line) => line.includes('"msg":"progress"'))
      .map((line) => JSON.parse(line) as { progress: { windowsTotal: number } });
    expect(progress.length).toBeGreaterThan(0);
    expect(progress[0]?.progress.windowsTotal).toBeGreaterThanOrEqual(5);

    const { rows } = await db.pool.query<{ n: string }>('SELECT count(*) AS n FROM demo.posts');
    expect(rows[0]?.n).toBe('1500');

    // A second demo reloads the same windows and ends with the same rows.
    const again = await runCli(['demo'], { DATABASE_URL: db.url });
    expect(again.code).toBe(0);
    const { rows: after } = await db.pool.query<{ n: string }>('SELECT count(*) AS n FROM demo.posts');
    expect(after[0]?.n).toBe('1500');
  });

  it('refuses a bad --days with exit 2', async () => {
    const result = await runCli(['demo', '--days', '0'], { DATABASE_URL: db.url });
    expect(result.code).toBe(2);
    expect(result.stderr).toContain('--days must be an integer from 1 to 366, got "0"');
  });
});
