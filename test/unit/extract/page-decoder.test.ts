import { describe, expect, it } from 'vitest';
import { decodePage } from '../../../src/extract/page-decoder.js';

const WINDOW = { start: '2026-11-01', end: '2026-11-07' };

function pageOf(posts: number): Buffer {
  const data = Array.from(
    { length: posts },
    (_, i) =>
      `{"platform_post_id":${i + 1},"brand":"b${i}","custom_segments":[{"name":"n","value":"v${i}"}]}`,
  );
  return Buffer.from(`{"status":"DONE","data":[${data.join(',')}],"response_metadata":[{"next_page":null}]}`);
}

const mapping = { postIdField: 'platform_post_id', window: WINDOW, keep: null, page: 1 };

describe('decodePage', () => {
  // A page is decoded while the page before is written: each round trip of that write waits for the decoding to
  // let the event loop turn.
  it('lets pending I/O run while it decodes a page of a thousand posts, and not for a page of a few', async () => {
    const servedDuring = async (posts: number): Promise<boolean> => {
      let decoded = false;
      let served: boolean | undefined;
      setImmediate(() => {
        served = !decoded;
      });
      const page = await decodePage(pageOf(posts), mapping);
      decoded = true;
      expect(page?.posts.length).toBe(posts);
      await new Promise((resolve) => setImmediate(resolve));
      return served === true;
    };
    expect(await servedDuring(1000)).toBe(true);
    expect(await servedDuring(3)).toBe(false);
  });
});
