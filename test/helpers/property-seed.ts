/*
 * Every property test runs on one fixed seed, so that CI tests the same inputs each run and a failure replays from
 * its log: fast-check names the seed (and the path) in each failure. PROPERTY_SEED runs them on another seed, to
 * replay one or to explore.
 */
import fc from 'fast-check';

/** The seed when PROPERTY_SEED is not set. */
export const DEFAULT_PROPERTY_SEED = 20_260_044;

/** The seed PROPERTY_SEED names (a 32-bit integer), or the default. */
export function propertySeed(env: NodeJS.ProcessEnv): number {
  const text = env.PROPERTY_SEED;
  if (text === undefined || text === '') return DEFAULT_PROPERTY_SEED;
  const seed = Number(text);
  if (!Number.isSafeInteger(seed) || seed < -(2 ** 31) || seed >= 2 ** 32) {
    throw new Error(`PROPERTY_SEED must be a 32-bit integer, got ${JSON.stringify(text)}`);
  }
  return seed;
}

fc.configureGlobal({ seed: propertySeed(process.env) });
