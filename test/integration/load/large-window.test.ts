import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { beforeAll, describe, expect, it } from 'vitest';
import { Loader } from '../../../src/load/loader.js';
import { migrate } from '../../../src/load/migrate.js';
import { ExactNumber, type FieldValue, type MappedPost } from '../../../src/model/post-record.js';
import { createTestDatabase } from '../../helpers/database.js';
import { captureLogger, post, stagePage, target } from './load-fixtures.js';

const db = await createTestDatabase();
const { logger } = captureLogger();
const loader = new Loader(db.pool, target, logger);

// A forced collection makes "retained after the load" a stable measure (behaviour check, not timing).
setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc') as () => void;

beforeAll(async () => {
  await migrate(db.pool, target, logger);
});

const PAGE = 1000;
const PAGES = 100;
const BASE_ID = 17841405793187218n;

/** A deterministic post: 17-digit id, ~20 sparse metrics (integers and decimals), strings, 2 segments. */
function generatedPost(n: number): MappedPost {
  const fields: Record<string, FieldValue> = {
    brand: `Brand ${n % 17}`,
    market: n % 2 ? 'US' : 'DE',
    channel: ['Instagram', 'TikTok', 'YouTube'][n % 3]!,
    status: n % 5 ? 'In-Flight' : 'Pre-Flight',
    creative_link: `https://example.com/c/${n}?q=a\tb`,
  };
  for (let k = 0; k < 20; k++) {
    if ((n + k) % 3 === 0) continue;
    fields[`metric_${k}`] = k < 10 ? n * (k + 1) : new ExactNumber(`${n % 1000}.${(n * 7919 + k) % 100000}`);
  }
  return post((BASE_ID + BigInt(n)).toString(), fields, [
    { name: 'Region', value: ['North', 'South', 'East'][n % 3]! },
    { name: 'Campaign Type', value: n % 2 ? 'Always On' : 'Burst' },
  ]);
}

function* pages(): Generator<MappedPost[]> {
  for (let p = 0; p < PAGES; p++) {
    const posts: MappedPost[] = new Array(PAGE);
    for (let i = 0; i < PAGE; i++) posts[i] = generatedPost(p * PAGE + i);
    yield posts;
  }
}

describe('a window of 100,000 posts', () => {
  it('loads page by page with memory that does not grow with the window', async () => {
    // Warm-up: columns exist and code is compiled before the baseline.
    const warm = { start: '2025-12-01', end: '2025-12-07' };
    await loader.openWindow(warm, 'warm');
    await stagePage(loader, warm, { index: 0, nextPage: null, posts: [...pages().next().value!] });
    await loader.commitWindows([warm]);

    const w = { start: '2026-01-01', end: '2026-01-07' };
    gc();
    const baseline = process.memoryUsage().heapUsed;
    let peak = baseline;
    const started = performance.now();
    await loader.openWindow(w, 'big');
    let index = 0;
    for (const posts of pages()) {
      await stagePage(loader, w, { index, nextPage: index + 1 < PAGES ? `p${index + 1}` : null, posts });
      index++;
      // The live heap (after a collection) every 10 pages: it must stay flat as the window grows.
      if (index % 10 === 0) {
        gc();
        peak = Math.max(peak, process.memoryUsage().heapUsed);
      }
    }
    const staged = performance.now();
    const { rows } = await loader.commitWindows([w]);
    const finished = performance.now();
    gc();
    const retained = process.memoryUsage().heapUsed - baseline;

    expect(rows).toBe(PAGE * PAGES);
    const counts = await db.pool.query(
      `SELECT (SELECT count(*)::int FROM post_reports.posts WHERE _window_start = $1) AS posts,
              (SELECT count(*)::int FROM post_reports.post_custom_segments WHERE _window_start = $1) AS segments,
              (SELECT max(platform_post_id)::text FROM post_reports.posts WHERE _window_start = $1) AS max_id`,
      [w.start],
    );
    expect(counts.rows[0]).toEqual({
      posts: 100_000,
      segments: 200_000,
      max_id: (BASE_ID + 99_999n).toString(),
    });
    expect(retained).toBeLessThan(60 * 1024 * 1024);
    expect(peak - baseline).toBeLessThan(60 * 1024 * 1024);
    const seconds = (finished - started) / 1000;
    console.log(
      `100k-post window: ${(rows / seconds).toFixed(0)} posts/s overall (staging ${((staged - started) / 1000).toFixed(2)} s, swap ${((finished - staged) / 1000).toFixed(2)} s); live heap peak +${((peak - baseline) / 2 ** 20).toFixed(1)} MB, retained +${(retained / 2 ** 20).toFixed(1)} MB`,
    );
  });
});
