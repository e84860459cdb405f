import { describe, expect, it } from 'vitest';
import { type SimulatorOptions, startSimulator } from '../../../src/simulator/server.js';

describe('the organizations option', () => {
  const week = { start_date: '2026-03-01', end_date: '2026-03-07' };

  it('gives each organization the dimensions and posts a simulator of its seed alone has', async () => {
    const [alone, several] = await Promise.all([
      startSimulator({ seed: 21, postsPerDay: 30 }),
      startSimulator({
        seed: 3,
        postsPerDay: 30,
        organizations: [
          { token: 'first', seed: 22 },
          { token: 'second', seed: 21 },
          { token: 'third', seed: 21, postsPerDay: 5 },
        ],
      }),
    ]);
    try {
      const texts = alone.referencePosts(week).map((post) => post.text);
      expect(texts).toHaveLength(210);
      expect(several.referencePosts(week, 'second').map((post) => post.text)).toEqual(texts);
      expect(several.referencePosts(week, 'third').map((post) => post.text)).toEqual(
        texts.filter((_, i) => i % 30 < 5),
      );
      expect(several.referencePosts(week).map((post) => post.text)).toEqual(
        several.referencePosts(week, 'first').map((post) => post.text),
      );
      expect(several.referenceIds(week, 'first')).not.toEqual(alone.referenceIds(week));
    } finally {
      await Promise.all([alone.close(), several.close()]);
    }
  });

  it('serves the same post ids to organizations whose seeds are 97 apart, with other posts', async () => {
    const simulator = await startSimulator({
      postsPerDay: 20,
      organizations: [
        { token: 'low', seed: 5 },
        { token: 'high', seed: 5 + 97 },
        { token: 'next', seed: 6 },
      ],
    });
    try {
      const low = simulator.referencePosts(week, 'low');
      const high = simulator.referencePosts(week, 'high');
      expect(high.map((post) => post.id)).toEqual(low.map((post) => post.id));
      expect(high.filter((post, i) => post.text === low[i]?.text)).toEqual([]);
      const next = new Set(simulator.referenceIds(week, 'next'));
      expect(low.filter((post) => next.has(post.id))).toEqual([]);
    } finally {
      await simulator.close();
    }
  });

  it('keeps the top-level token and seed meaning what they meant without organizations', async () => {
    const simulator = await startSimulator({ seed: 8, token: 'only-token', postsPerDay: 2 });
    try {
      expect(simulator.token).toBe('only-token');
      expect(simulator.tokens).toEqual(['only-token']);
      expect(simulator.referencePosts(week, 'only-token')).toEqual(simulator.referencePosts(week));
      expect(simulator.stats('only-token').requests).toBe(0);
    } finally {
      await simulator.close();
    }
    const plain = await startSimulator();
    try {
      expect(plain.tokens).toEqual(['sim-token']);
    } finally {
      await plain.close();
    }
  });

  it.each<[string, SimulatorOptions, RegExp]>([
    ['no organization', { organizations: [] }, /at least one organization/],
    [
      'a token besides the organizations',
      { token: 'x', organizations: [{ token: 'y', seed: 1 }] },
      /token and organizations exclude each other/,
    ],
    [
      'a token twice',
      {
        organizations: [
          { token: 'same', seed: 1 },
          { token: 'same', seed: 2 },
        ],
      },
      /organizations\[1\]\.token "same" is given twice/,
    ],
    [
      'a token with a space',
      { organizations: [{ token: 'a b', seed: 1 }] },
      /organizations\[0\]\.token must be printable ASCII without spaces, got "a b"/,
    ],
    [
      'a fractional seed',
      { organizations: [{ token: 'a', seed: 1.5 }] },
      /organizations\[0\]\.seed .* got 1\.5/,
    ],
    [
      'a negative postsPerDay',
      { organizations: [{ token: 'a', seed: 1, postsPerDay: -1 }] },
      /organizations\[0\]\.postsPerDay .* got -1/,
    ],
    [
      'a segment dimension twice',
      {
        organizations: [
          {
            token: 'a',
            seed: 1,
            segmentDimensions: [
              { name: 'Tier', values: ['Gold'] },
              { name: 'Tier', values: ['Silver'] },
            ],
          },
        ],
      },
      /organizations\[0\]: segment dimension "Tier" is configured twice/,
    ],
  ])('refuses %s, naming the bad value', async (_, options, message) => {
    await expect(startSimulator(options)).rejects.toThrow(message);
  });

  it('refuses a token no organization has in every per-organization method', async () => {
    const simulator = await startSimulator({ organizations: [{ token: 'known', seed: 1 }] });
    try {
      for (const call of [
        () => simulator.referencePosts(week, 'unknown'),
        () => simulator.referenceIds(week, 'unknown'),
        () => simulator.addPosts('2026-03-01', 1, 'unknown'),
        () => simulator.removePosts('2026-03-01', 1, 'unknown'),
        () => simulator.reviseFigures('2026-03-01', 'unknown'),
        () => simulator.refuseReports([], undefined, 'unknown'),
        () => simulator.rejectToken({ token: 'unknown' }),
        () => simulator.acceptToken('unknown'),
        () => simulator.stats('unknown'),
        () => simulator.requests('unknown'),
      ]) {
        expect(call).toThrow('no organization is served under the token "unknown"');
      }
    } finally {
      await simulator.close();
    }
  });
});
