/*
 * The soak's fault plans (test/soak/fault-plan.ts): a commit cut is planned only in a run of one process, never
 * beside a fault that ends the run or its sessions nor a reset, and always with the cuts its kind names.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { Random } from '../../../src/simulator/random.js';
import { drawFaultPlan, FAULT_KINDS, type FaultKind, SHARED_RUN_KINDS } from '../../soak/fault-plan.js';

const RANGE = { windowStarts: ['2025-04-07', '2025-04-14'], dates: ['2025-04-07', '2025-04-08'] };
const COMMIT_CUTS: Readonly<Record<string, readonly string[]>> = {
  'commit-answer-lost': ['answer'],
  'commit-cut-twice': ['statement', 'answer'],
};
const NEVER_WITH_A_CUT: readonly FaultKind[] = [
  'sigkill',
  'sigterm',
  'failover',
  'db-connection-killed',
  'filter-reset',
];

describe("the soak's fault plans", () => {
  it('plan a commit cut alone of its kind, with its cuts, and never beside a kill, a failover or a reset', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 0, max: 2 ** 32 - 1 }),
        fc.constantFrom(...FAULT_KINDS),
        fc.boolean(),
        (seed, primary, canReset) => {
          const plan = drawFaultPlan(new Random(seed), RANGE, primary, { canReset, shared: false });
          const cuts = plan.kinds.filter((kind) => kind in COMMIT_CUTS);
          expect(cuts.length).toBeLessThanOrEqual(1);
          const [cut] = cuts;
          if (cut === undefined) {
            expect(plan.commitCuts).toBeNull();
            return;
          }
          expect(plan.commitCuts).toEqual({ kind: cut, cuts: COMMIT_CUTS[cut] });
          expect(plan.kinds.filter((kind) => NEVER_WITH_A_CUT.includes(kind))).toEqual([]);
        },
      ),
    );
  });

  it('plan the commit cuts as the primary fault of runs of one process', () => {
    for (const primary of ['commit-answer-lost', 'commit-cut-twice'] as const) {
      for (let seed = 0; seed < 50; seed += 1) {
        const plan = drawFaultPlan(new Random(seed), RANGE, primary, { canReset: true, shared: false });
        expect(plan.kinds).toContain(primary);
        expect(plan.commitCuts?.kind).toBe(primary);
      }
    }
  });

  it('never plan a commit cut in a run of several processes or organizations', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 0, max: 2 ** 32 - 1 }),
        fc.constantFrom(...SHARED_RUN_KINDS),
        (seed, primary) => {
          const plan = drawFaultPlan(new Random(seed), RANGE, primary, { canReset: true, shared: true });
          expect(plan.commitCuts).toBeNull();
          expect(plan.kinds.filter((kind) => kind in COMMIT_CUTS)).toEqual([]);
        },
      ),
    );
    expect(() =>
      drawFaultPlan(new Random(1), RANGE, 'commit-answer-lost', { canReset: true, shared: true }),
    ).toThrow(/commit-answer-lost/);
  });
});
