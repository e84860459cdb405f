/*
 * What a run would do, without doing any of it: the windows of its range, each with where it stands now and
 * whether the run would load it. Reads only (no migration, no API call), so that an orchestrator can map tasks
 * over it and an operator can see what will happen.
 */

import type pg from 'pg';
import type { Config } from '../config.js';
import { answeredWith } from '../error-policy.js';
import { type LockHolder, windowClaimHolders } from '../load/locks.js';
import type { Scope } from '../load/scope.js';
import {
  firstLoadedDate,
  listWindows,
  loadedWindows,
  readTarget,
  type WindowState,
} from '../load/window-state.js';
import { byStart, type LoadedWindow, type Window } from '../model/window.js';
import { runScope } from './run-context.js';
import type { LoadedHistory, RunRange } from './run-request.js';
import { planWindows } from './windows.js';

/** Where a window stands now. */
export type PlanState = 'todo' | 'loaded' | 'failed' | 'claimed' | 'interrupted';

/** One window of a plan, as `plan` prints it (one JSON line each). */
export interface PlannedWindow extends Window {
  readonly state: PlanState;
  /** Whether the run would load it (a loaded window is loaded again by --reload, a sync's lookback, or when open). */
  readonly load: boolean;
  readonly loadedAt: string | null;
  readonly loadedThrough: string | null;
  readonly rows: number | null;
  readonly lastError: string | null;
  /** The live process working on it now. */
  readonly claimedBy: LockHolder | null;
  /**
   * Loaded windows of other extents it overlaps: loading it replaces each whole (their dates beyond it are loaded
   * in the same commit, as windows of their own), with the rows they hold now.
   */
  readonly replaces: readonly (Window & { readonly rows: number })[];
  /**
   * Whether its dates are outside the range asked for: the rest of a loaded window that a window of the range
   * replaces, loaded again with it so that no date is lost.
   */
  readonly outsideRange: boolean;
}

interface SchemaState {
  readonly history: LoadedHistory;
  readonly loaded: LoadedWindow[];
  readonly windows: WindowState[];
}

const NOTHING: SchemaState = { history: { cursor: null, firstLoaded: null }, loaded: [], windows: [] };

/**
 * The windows `resolve` gives for what the organization holds, with their standing; `config` names the schema and
 * the organization. With
 * `reset`, as a --reset run plans them: from nothing loaded, each window loaded, its standing shown as it is now.
 */
export async function planRun(
  pool: pg.Pool,
  config: Config,
  resolve: (history: LoadedHistory) => RunRange,
  options: { readonly reset?: boolean } = {},
): Promise<PlannedWindow[]> {
  const scope = runScope(config);
  const state = await readState(pool, scope);
  const from = options.reset === true ? NOTHING : state;
  const range = resolve(from.history);
  const plan = planWindows(range.windows, from.loaded, {
    reload: range.reload,
    ...(range.reloadFrom === undefined ? {} : { reloadFrom: range.reloadFrom }),
  });
  const toLoad = plan.groups.flat();
  const all = [...toLoad, ...plan.skipped].sort(byStart);
  const holders = await windowClaimHolders(pool, scope, all);
  return all.map((window, i) => {
    const recorded = state.windows.find((w) => w.start === window.start && w.end === window.end);
    const claimedBy = holders[i] ?? null;
    return {
      start: window.start,
      end: window.end,
      state: claimedBy !== null ? 'claimed' : stateOf(recorded),
      load: toLoad.includes(window),
      loadedAt: recorded?.rowCount == null ? null : (recorded.finishedAt?.toISOString() ?? null),
      loadedThrough: recorded?.loadedThrough ?? null,
      rows: recorded?.rowCount ?? null,
      lastError: recorded?.lastError ?? null,
      claimedBy,
      replaces: from.windows
        .filter(
          (w) =>
            w.rowCount !== null &&
            w.status !== 'superseded' &&
            w.start <= window.end &&
            window.start <= w.end &&
            !(w.start === window.start && w.end === window.end),
        )
        .map((w) => ({ start: w.start, end: w.end, rows: w.rowCount ?? 0 })),
      outsideRange: window.end < range.from || window.start > range.to,
    };
  });
}

function stateOf(recorded: WindowState | undefined): PlanState {
  switch (recorded?.status) {
    case undefined:
    case 'superseded':
      return 'todo';
    case 'loaded':
      return 'loaded';
    case 'failed':
      return 'failed';
    default:
      return 'interrupted';
  }
}

async function readState(pool: pg.Pool, scope: Scope): Promise<SchemaState> {
  try {
    const target = await readTarget(pool, scope);
    if (target === null) return NOTHING;
    return {
      history: { cursor: target.cursorDate, firstLoaded: await firstLoadedDate(pool, scope) },
      loaded: await loadedWindows(pool, scope),
      windows: await listWindows(pool, scope),
    };
  } catch (error) {
    // A schema not set up yet: nothing is loaded.
    if (answeredWith(error, 'no such table')) return NOTHING;
    throw error;
  }
}
