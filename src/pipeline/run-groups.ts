import pLimit from 'p-limit';
import { byStart } from '../model/window.js';
import type { WindowFailure } from './run-summary.js';
import { type RunWindow, windowFailure } from './run-window.js';
import type { WindowGroup } from './windows.js';

export interface LoadOutcome {
  readonly failures: WindowFailure[];
  readonly interrupted: number;
}

/** Commits a group of windows in one transaction; resolves to the posts loaded. */
export type CommitGroup = (group: WindowGroup) => Promise<{ rows: number }>;

/**
 * Stages the windows of every group, `concurrency` at a time, and commits each group whole. A failing window
 * never stops the others; its group is not committed.
 */
export async function loadGroups(
  runWindow: RunWindow,
  groups: readonly WindowGroup[],
  options: { readonly concurrency: number; readonly signal: AbortSignal; readonly commit: CommitGroup },
): Promise<LoadOutcome> {
  const limit = pLimit(options.concurrency);
  const failures: WindowFailure[] = [];
  let interrupted = 0;
  await Promise.all(
    groups.map(async (group) => {
      const staged = await Promise.allSettled(group.map((w) => limit(() => runWindow.stage(w))));
      const outcome = await finishGroup(runWindow, group, staged, options);
      failures.push(...outcome.failures);
      interrupted += outcome.interrupted;
    }),
  );
  failures.sort(byStart);
  return { failures, interrupted };
}

async function finishGroup(
  runWindow: RunWindow,
  group: WindowGroup,
  staged: readonly PromiseSettledResult<void>[],
  options: { readonly signal: AbortSignal; readonly commit: CommitGroup },
): Promise<LoadOutcome> {
  const { signal } = options;
  const failures: WindowFailure[] = [];
  staged.forEach((result, i) => {
    // A window stopped by SIGINT/SIGTERM has not failed: its report and stage wait for the next run.
    if (result.status === 'rejected' && !signal.aborted)
      failures.push(windowFailure(group[i]!, result.reason));
  });
  if (signal.aborted) return { failures, interrupted: group.length - failures.length };
  if (failures.length > 0) {
    // A group commits whole or not at all; its windows that did stage are marked failed too.
    const message = 'not committed: another window of its group failed';
    for (const [i, w] of group.entries()) {
      if (staged[i]?.status !== 'fulfilled') continue;
      failures.push({ ...w, code: 'GROUP_FAILED', message });
      await runWindow.markFailed(w, message);
    }
    return { failures, interrupted: 0 };
  }
  try {
    const started = Date.now();
    const { rows } = await options.commit(group);
    runWindow.committed(group, rows, Date.now() - started);
  } catch (error) {
    if (signal.aborted) return { failures, interrupted: group.length };
    for (const w of group) {
      const failure = windowFailure(w, error);
      failures.push(failure);
      await runWindow.markFailed(w, failure.message);
    }
  }
  return { failures, interrupted: 0 };
}
