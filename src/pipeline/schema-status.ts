import type pg from 'pg';
import { SETTINGS } from '../config.js';
import { answeredWith } from '../error-policy.js';
import { ConfigError } from '../errors.js';
import { type LockHolder, organizationLockHolders, windowClaimHolders } from '../load/locks.js';
import type { Scope } from '../load/scope.js';
import { listStages, type StageTables } from '../load/stage-sweep.js';
import {
  listOrganizations,
  listWindows,
  readTarget,
  type SyncState,
  schemaExists,
  type WindowState,
} from '../load/window-state.js';
import type { FieldSelection } from '../model/field-selection.js';
import type { Filters } from '../model/filters.js';

/**
 * How a window stands, as an operator needs it: `in progress` only while a live run holds its claim; an attempt
 * that no live run holds any more (killed, stopped, a rejected token) is `interrupted`, and the next run resumes
 * it.
 */
export type WindowStanding = 'loaded' | 'failed' | 'in progress' | 'interrupted' | 'superseded';

export interface WindowStatus extends WindowState {
  readonly standing: WindowStanding;
  /** The live run working on the window now, if any. */
  readonly claimedBy: LockHolder | null;
}

export interface SchemaStatus {
  readonly schema: string;
  readonly organization: string;
  readonly cursor: string | null;
  readonly filters: Filters | null;
  /** The fields the schema loads (null before its first run). */
  readonly fields: FieldSelection | null;
  /** The oldest live run of the organization; null when none is alive. */
  readonly run: LockHolder | null;
  /** Every live run of the organization (they share it), oldest first. */
  readonly runs: readonly LockHolder[];
  /** Every window counted once, by standing. */
  readonly windows: {
    readonly total: number;
    readonly loaded: number;
    readonly failed: number;
    readonly inProgress: number;
    readonly interrupted: number;
    readonly superseded: number;
  };
  /** Windows whose rows are in the tables (a failed reload keeps its previous rows), and their posts. */
  readonly windowsWithRows: number;
  readonly posts: number;
  readonly details: readonly WindowStatus[];
  /**
   * Every stage table of the organization, by window, with its size: a window's stage in progress, or one no
   * window will resume that the next run drops.
   */
  readonly stages: readonly StageTables[];
  /** Their size together, in bytes (of those whose size could be read without waiting: StageTables.bytes). */
  readonly stageBytes: number;
}

/** The standing of a window given its recorded status and whether a live run holds its claim now. */
export function standingOf(window: Pick<WindowState, 'status'>, claimed: boolean): WindowStanding {
  const { status } = window;
  switch (status) {
    case 'loaded':
    case 'failed':
    case 'superseded':
      return status;
    default:
      // 'extracting' and 'staging' are an attempt under way; 'pending' one stopped by a signal or a rejected token.
      return claimed && status !== 'pending' ? 'in progress' : 'interrupted';
  }
}

/**
 * Reads an organization's windows, cursor and live runs in a schema (read only; an empty status for a schema or
 * an organization not set up yet).
 */
export async function readSchemaStatus(db: pg.Pool, scope: Scope): Promise<SchemaStatus> {
  const { schema } = scope;
  // A schema name mistyped would otherwise read as an empty schema: "0 windows loaded".
  if (!(await schemaExists(db, schema))) {
    throw new ConfigError(
      'CONFIG_INVALID',
      `schema ${JSON.stringify(schema)} does not exist: check ${SETTINGS.schema.env} (${SETTINGS.schema.flag})`,
    );
  }
  let target: SyncState | null = null;
  let windows: WindowState[] = [];
  let fields: FieldSelection | null = null;
  let stages: StageTables[] = [];
  try {
    target = await readTarget(db, scope);
    windows = await listWindows(db, scope);
    fields = target?.fieldSelection ?? null;
    stages = await listStages(db, scope);
  } catch (error) {
    if (!answeredWith(error, 'no such table')) throw error;
  }
  const runs = await organizationLockHolders(db, scope);
  const holders = await windowClaimHolders(db, scope, windows);
  const details = windows.map((w, i) => {
    const claimedBy = holders[i] ?? null;
    return { ...w, standing: standingOf(w, claimedBy !== null), claimedBy };
  });
  const count = (standing: WindowStanding) => details.filter((w) => w.standing === standing).length;
  return {
    schema,
    organization: scope.org,
    cursor: target?.cursorDate ?? null,
    filters: target?.filters ?? null,
    fields,
    run: runs[0] ?? null,
    runs,
    windows: {
      total: details.length,
      loaded: count('loaded'),
      failed: count('failed'),
      inProgress: count('in progress'),
      interrupted: count('interrupted'),
      superseded: count('superseded'),
    },
    windowsWithRows: windows.filter((w) => w.rowCount !== null).length,
    posts: windows.reduce((n, w) => n + (w.rowCount ?? 0), 0),
    details,
    stages,
    stageBytes: stages.reduce((n, stage) => n + (stage.bytes ?? 0), 0),
  };
}

/** The organizations of a schema (those with a target), by id; none for a schema not set up yet. */
export async function readOrganizations(db: pg.Pool, schema: string): Promise<string[]> {
  if (!(await schemaExists(db, schema))) {
    throw new ConfigError(
      'CONFIG_INVALID',
      `schema ${JSON.stringify(schema)} does not exist: check ${SETTINGS.schema.env} (${SETTINGS.schema.flag})`,
    );
  }
  try {
    return await listOrganizations(db, schema);
  } catch (error) {
    if (answeredWith(error, 'no such table')) return [];
    throw error;
  }
}
