import { describe, expect, it } from 'vitest';
import { createOrganization } from '../../../src/simulator/organization.js';
import { PostGenerator } from '../../../src/simulator/post-generator.js';
import { startSimulator } from '../../../src/simulator/server.js';

describe('determinism', () => {
  const week = { start_date: '2026-03-01', end_date: '2026-03-07' };

  it('produces the same organization and posts for the same seed, different ones for another seed', async () => {
    const [a, b, c] = await Promise.all([
      startSimulator({ seed: 42, postsPerDay: 30 }),
      startSimulator({ seed: 42, postsPerDay: 30 }),
      startSimulator({ seed: 43, postsPerDay: 30 }),
    ]);
    try {
      const textsA = a.referencePosts(week).map((post) => post.text);
      expect(textsA).toHaveLength(210);
      expect(b.referencePosts(week).map((post) => post.text)).toEqual(textsA);
      const textsC = c.referencePosts(week).map((post) => post.text);
      expect(textsC).toHaveLength(210);
      expect(textsC.filter((text, i) => text === textsA[i])).toHaveLength(0);
      expect(createOrganization(42)).toEqual(createOrganization(42));
      const seeds = Array.from({ length: 8 }, (_, seed) => JSON.stringify(createOrganization(seed)));
      expect(new Set(seeds).size).toBeGreaterThan(1);
    } finally {
      await Promise.all([a.close(), b.close(), c.close()]);
    }
  });

  it('generates a post from (seed, date, index) alone, whatever was generated before', () => {
    const organization = createOrganization(5);
    const first = new PostGenerator(organization, 5, 'platform_post_id');
    const second = new PostGenerator(organization, 5, 'platform_post_id');
    const day = 20_500;
    const forward = Array.from({ length: 20 }, (_, index) => first.render(day, index));
    const backward = Array.from({ length: 20 }, (_, index) => second.render(day, 19 - index)).reverse();
    expect(backward).toEqual(forward);
    expect(first.reference(day, 7).text).toBe(forward[7]);
  });

  it('gives every post a unique 17-digit id above 2^53, under the configured field name', () => {
    const generator = new PostGenerator(createOrganization(9), 9, 'acme_post_id');
    const ids = new Set<string>();
    for (const day of [-719_162, 0, 20_500, 2_932_896]) {
      for (let index = 0; index < 500; index++) {
        const id = generator.postId(day, index);
        expect(id).toMatch(/^\d{17}$/);
        expect(BigInt(id) > 2n ** 53n).toBe(true);
        ids.add(id);
      }
    }
    expect(ids.size).toBe(2000);
    expect(generator.render(20_500, 3)).toMatch(/^\{"acme_post_id":\d{17},/);
  });
});
