/*
 * The property tests run on a fixed seed: each fc.assert of every file takes it from the setup file, and a failure
 * names it. Without the setup file fast-check draws a new seed each run.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { DEFAULT_PROPERTY_SEED, propertySeed } from '../helpers/property-seed.js';

describe('the property tests’ seed', () => {
  it('is fixed for every fc.assert of the run, and named in a failure', () => {
    expect(fc.readConfigureGlobal().seed).toBe(propertySeed(process.env));
    const drawn: number[][] = [];
    for (let i = 0; i < 2; i++) {
      const values: number[] = [];
      fc.assert(
        fc.property(fc.integer(), (n) => {
          values.push(n);
        }),
        { numRuns: 20 },
      );
      drawn.push(values);
    }
    expect(drawn[1]).toEqual(drawn[0]);
    const seed = propertySeed(process.env);
    expect(() => fc.assert(fc.property(fc.integer(), () => false))).toThrow(`seed: ${seed}`);
  });

  it('is the default unless PROPERTY_SEED names another, and refuses one that is not a 32-bit integer', () => {
    expect(propertySeed({})).toBe(DEFAULT_PROPERTY_SEED);
    expect(propertySeed({ PROPERTY_SEED: '' })).toBe(DEFAULT_PROPERTY_SEED);
    expect(propertySeed({ PROPERTY_SEED: '17' })).toBe(17);
    for (const bad of ['x', '1.5', String(2 ** 40)]) {
      expect(() => propertySeed({ PROPERTY_SEED: bad })).toThrow(/PROPERTY_SEED must be a 32-bit integer/);
    }
  });
});
