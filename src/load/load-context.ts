import type pg from 'pg';
import type { Logger } from '../logger.js';
import type { DeclaredType } from './declared-types.js';
import type { Target } from './migrate.js';
import type { Scope } from './scope.js';

/** What staging and committing a window work with. */
export interface LoadContext {
  readonly pool: pg.Pool;
  readonly target: Target;
  /** The target's schema and organization. */
  readonly scope: Scope;
  readonly logger: Logger;
  /** The documented fields' column types. */
  readonly declared: ReadonlyMap<string, DeclaredType>;
  /** What the run has done to posts' columns so far: the budget of what it may still do follows from it. */
  readonly columns: RunColumns;
}

/** Counted over a run (one Loader), never across runs. */
export interface RunColumns {
  /** Columns of posts widened in this run. */
  widenings: number;
  /** Fields the run found no room for and logged: each is logged once a run. */
  readonly kept: Set<string>;
}
