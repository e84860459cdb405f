import pLimit from 'p-limit';
import type { ClaimOutcome, WindowClaims } from '../load/window-claims.js';
import type { WindowCommit } from '../load/window-commit.js';
import { byStart } from '../model/window.js';
import type { WindowSlots } from './run-context.js';
import type { WindowFailure } from './run-summary.js';
import { type WindowStager, windowFailure } from './window-stager.js';
import type { WindowGroup } from './windows.js';

export interface LoadOutcome {
  readonly failures: WindowFailure[];
  /** Windows a signal stopped after they began: their attempt waits for the next run. */
  readonly interrupted: number;
  /** Windows a signal stopped before they began: left as they were. */
  readonly notStarted: number;
  /** Windows another process loaded while this run waited for them. */
  readonly byOthers: number;
}

interface GroupOptions {
  readonly concurrency: number;
  /** A budget the windows share with other runs of the process, besides their own `concurrency`. */
  readonly shared?: WindowSlots;
  readonly signal: AbortSignal;
  readonly claims: WindowClaims;
  /** The owner of each group's commit. */
  readonly commits: WindowCommit;
}

/**
 * How one group ended: counted, its claim lost before the commit (it waits its turn again), or loaded by the
 * process that took it meanwhile.
 */
type GroupEnd =
  | { readonly failures: WindowFailure[]; readonly interrupted: number; readonly notStarted: number }
  | 'lost'
  | 'done';

/**
 * The slots a run's windows take: `concurrency` of its own and, with a budget shared with other runs, one of that
 * too. A window takes its run's slot first: a run never queues more windows on the shared budget than its own
 * share, so that the runs' windows take turns there and a run with many cannot starve the others.
 */
export function windowLimit(concurrency: number, shared?: WindowSlots): WindowSlots {
  const own = pLimit(concurrency);
  return <T>(task: () => Promise<T>): Promise<T> =>
    shared === undefined ? own(task) : own(() => shared(task));
}

/**
 * Stages the windows of every group, `concurrency` at a time, and commits each group whole. A failing window
 * never stops the others; its group is not committed. A group another process holds is left for later: this run
 * does every other group first, then waits for each in turn, and counts it as done when the other loaded it.
 */
export async function loadGroups(
  stager: WindowStager,
  groups: readonly WindowGroup[],
  options: GroupOptions,
): Promise<LoadOutcome> {
  const { signal, claims } = options;
  const limit = windowLimit(options.concurrency, options.shared);
  const failures: WindowFailure[] = [];
  const deferred: WindowGroup[] = [];
  let interrupted = 0;
  let notStarted = 0;
  let byOthers = 0;
  const settle = (group: WindowGroup, end: GroupEnd): void => {
    if (end === 'lost') {
      deferred.push(group);
      return;
    }
    if (end === 'done') {
      byOthers += group.length;
      return;
    }
    failures.push(...end.failures);
    interrupted += end.interrupted;
    notStarted += end.notStarted;
  };
  const stageAndCommit = async (group: WindowGroup): Promise<void> => {
    const staged = await Promise.allSettled(group.map((w) => limit(() => stager.stage(w))));
    settle(group, await finishGroup(stager, group, staged, options));
  };

  // First pass: each group is claimed when its first window gets a slot, so that processes split the range.
  await Promise.all(
    groups.map(async (group) => {
      let claim: Promise<ClaimOutcome> | undefined;
      const claimed = () => {
        claim ??= claims.claim(group, signal);
        return claim;
      };
      const staged = await Promise.allSettled(
        group.map((w) =>
          limit(async () => {
            if ((await claimed()) === 'claimed') await stager.stage(w);
          }),
        ),
      );
      // A claim that could not be asked for fails the group's windows through `staged`.
      const outcome = await claimed().catch((): ClaimOutcome => 'claimed');
      if (outcome === 'taken') deferred.push(group);
      else if (outcome === 'done') byOthers += group.length;
      else settle(group, await finishGroup(stager, group, staged, options));
    }),
  );

  // Then the groups other processes held, in order, each once it is free.
  let next = 0;
  for (;;) {
    const started: Promise<void>[] = [];
    while (next < deferred.length) {
      const group = deferred[next++]!;
      let outcome: Exclude<ClaimOutcome, 'taken'>;
      try {
        outcome = await claims.waitFor(group, signal);
      } catch (error) {
        if (signal.aborted) notStarted += group.length;
        else failures.push(...group.map((w) => windowFailure(w, error)));
        continue;
      }
      if (outcome === 'done') byOthers += group.length;
      else started.push(stageAndCommit(group));
    }
    if (started.length === 0) break;
    await Promise.all(started);
  }
  failures.sort(byStart);
  return { failures, interrupted, notStarted, byOthers };
}

async function finishGroup(
  stager: WindowStager,
  group: WindowGroup,
  staged: readonly PromiseSettledResult<void>[],
  options: GroupOptions,
): Promise<GroupEnd> {
  try {
    return await commitGroup(stager, group, staged, options);
  } finally {
    await options.claims.release(group);
  }
}

async function commitGroup(
  stager: WindowStager,
  group: WindowGroup,
  staged: readonly PromiseSettledResult<void>[],
  options: GroupOptions,
): Promise<GroupEnd> {
  const { signal } = options;
  const failures: WindowFailure[] = [];
  staged.forEach((result, i) => {
    // A window stopped by SIGINT/SIGTERM has not failed: its report and stage wait for the next run.
    if (result.status === 'rejected' && !signal.aborted)
      failures.push(windowFailure(group[i]!, result.reason));
  });
  if (signal.aborted) {
    const stopped = group.filter((w) => !failures.some((f) => f.start === w.start));
    const started = stopped.filter((w) => stager.wasStarted(w)).length;
    return { failures, interrupted: started, notStarted: stopped.length - started };
  }
  if (failures.length > 0) {
    // A group commits whole or not at all; its windows that did stage are marked failed too.
    const message = 'not committed: another window of its group failed';
    for (const [i, w] of group.entries()) {
      if (staged[i]?.status !== 'fulfilled') continue;
      failures.push({ ...w, code: 'GROUP_FAILED', message });
      await stager.markFailed(w, message);
    }
    return { failures, interrupted: 0, notStarted: 0 };
  }
  try {
    const started = Date.now();
    const end = await options.commits.commit(group, signal);
    // Another process loaded the group meanwhile: it owns its state, nothing of it is touched.
    if (end === 'done') return 'done';
    if (end === 'taken') {
      for (const w of group) await stager.markInterrupted(w, new Error('claim lost before the commit'));
      return 'lost';
    }
    stager.committed(group, end.rows, Date.now() - started);
  } catch (error) {
    if (signal.aborted) return { failures, interrupted: group.length, notStarted: 0 };
    for (const w of group) {
      const failure = windowFailure(w, error);
      failures.push(failure);
      await stager.markFailed(w, failure.message);
    }
  }
  return { failures, interrupted: 0, notStarted: 0 };
}
