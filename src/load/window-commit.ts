/*
 * The one owner of a group's commit: it checks that the run still holds the group (its claims) and the schema
 * (its run locks, checked again inside the commit's transaction), commits through the database's faults, and
 * says how the commit ended. A commit is one transaction, so it took effect whole or not at all; when its answer
 * was lost, the windows' recorded state (report_windows and their stages) tells which, and a commit that took
 * effect is counted loaded, never committed again.
 */
import type pg from 'pg';
import { oneLine, StoreError } from '../errors.js';
import type { Logger } from '../logger.js';
import { type Window, windowLabel } from '../model/window.js';
import type { StagedReport } from './commit.js';
import { asStoreError } from './database.js';
import { finalError, retryDatabase } from './database-retry.js';
import type { Loader } from './loader.js';
import type { RunLocks } from './locks.js';
import type { Scope } from './scope.js';
import type { WindowClaims } from './window-claims.js';
import { committedAs } from './window-state.js';

/** How a group's commit ended. */
export type CommitEnd =
  /** Committed by this run (`rows`: the posts loaded). */
  | { readonly rows: number }
  /** Another process holds one of its windows now: the group waits its turn again. */
  | 'taken'
  /** Another process loaded it meanwhile: its state is theirs. */
  | 'done';

export interface WindowCommitOptions {
  readonly pool: pg.Pool;
  readonly scope: Scope;
  readonly loader: Loader;
  readonly locks: RunLocks;
  readonly claims: WindowClaims;
  readonly logger: Logger;
  /** How long commits are retried through the database's faults, from the first (POST_REPORTS_RECONNECT_WAIT_MS). */
  readonly waitMs: number;
  /** The run's today (see CommitOptions.today). */
  readonly today: string;
}

export class WindowCommit {
  readonly #options: WindowCommitOptions;

  constructor(options: WindowCommitOptions) {
    this.#options = options;
  }

  /**
   * Commits a completely staged group under the run's locks and the group's claims; retries it through lost
   * sessions, serialization failures, deadlocks and lock timeouts for as long as the wait lasts. Throws what ends
   * it otherwise (the run's lock lost for good, a stale report, a schema that does not fit, a fault past the wait).
   */
  async commit(group: readonly Window[], runSignal: AbortSignal): Promise<CommitEnd> {
    // A signal of the commit's own: the listeners its statements add leave with it, not piling up on the run's.
    const signal = AbortSignal.any([runSignal]);
    const { pool, scope, loader, locks, claims, logger, waitMs, today } = this.#options;
    const windows = group.map(windowLabel);
    // What the commit's transaction found staged, once it got that far: what a lost answer is checked against.
    let staged: readonly StagedReport[] | undefined;
    const verify = async (client: pg.PoolClient, stages: readonly StagedReport[]): Promise<void> => {
      staged = stages;
      if (!(await locks.heldIn(client))) {
        throw new StoreError('DB_CONNECTION_LOST', 'the run lock was lost before the commit');
      }
      if (!(await claims.heldIn(client, group))) {
        throw new StoreError('DB_CONNECTION_LOST', 'the window claims were lost before the commit');
      }
    };
    const committing = retryDatabase(
      async (attempt): Promise<CommitEnd> => {
        // Whether an earlier attempt whose answer was lost took effect after all.
        const tookEffect = async (): Promise<CommitEnd | undefined> => {
          if (attempt === 1 || staged === undefined) return undefined;
          const rows = await committedAs(pool, scope, staged);
          if (rows === null) return undefined;
          logger.info({ windows }, 'the commit took effect before its answer was lost');
          return { rows };
        };
        const earlier = await tookEffect();
        if (earlier !== undefined) return earlier;
        // The claims connection may have died meanwhile, and another process taken the group: it is theirs now.
        const held = await claims.holds(group);
        if (held !== 'claimed') return held;
        // Waits while the run lock's session is taken again; one that cannot be ends the run, not a retry.
        await locks.held().catch((error: unknown) => {
          throw finalError(error);
        });
        try {
          return await loader.commitWindows(group, signal, { today, verify });
        } catch (error) {
          // The earlier attempt's transaction may have been ending on the server while this one began: its
          // COMMIT, come through meanwhile, took the stage this one found gone.
          const late = await tookEffect().catch(() => undefined);
          if (late !== undefined) return late;
          throw error;
        }
      },
      {
        waitMs,
        signal,
        onRetry: (fault, error) => {
          logger.warn(
            { windows, fault, reason: oneLine(error.message) },
            `the commit met a database fault (${fault}): committing again`,
          );
        },
      },
    );
    // What ends it (a fault past the wait included) is named as the commit's, with its SQLSTATE.
    return committing.catch((error: unknown) => {
      throw asStoreError(`committing ${windows.join(', ')}`, error);
    });
  }
}
