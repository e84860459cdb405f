import pg from 'pg';
import type { Window } from '../../src/model/window.js';
import type { ReportParams, RunningSimulator, SimulatorPost } from '../../src/simulator/server.js';
import { comparePosts, type LoadedTables, readTables } from '../helpers/reference-check.js';

/** What a window of the ledger holds: the figures of one epoch (see Ledger), under the episode's filters. */
interface LedgerEntry {
  readonly window: Window;
  readonly epoch: number;
}

export interface LedgerCheck {
  readonly problems: string[];
  /** Windows the ledger holds after the check. */
  readonly windows: number;
  readonly posts: number;
}

async function schemaReady(pool: pg.Pool, schema: string): Promise<boolean> {
  const { rows } = await pool.query<{ ready: boolean }>(
    'SELECT to_regclass($1) IS NOT NULL AND to_regclass($2) IS NOT NULL AS ready',
    [`${pg.escapeIdentifier(schema)}.posts`, `${pg.escapeIdentifier(schema)}.field_columns`],
  );
  return rows[0]?.ready === true;
}

const windowKey = (w: Window) => `${w.start}..${w.end}`;

/** The README's naming rule, for the names the simulator sends: a plain snake_case name is its own column. */
const PLAIN = /^[a-z][a-z0-9_]*$/;
const SYSTEM_COLUMNS = new Set(['xmin', 'xmax', 'cmin', 'cmax', 'ctid', 'tableoid']);

function ownColumn(field: string): string | undefined {
  return PLAIN.test(field) && Buffer.byteLength(field) <= 63 && !SYSTEM_COLUMNS.has(field)
    ? field
    : undefined;
}

/**
 * The tables read through the soak's own column for each field of `posts` (not the connector's field_columns),
 * and where field_columns says otherwise.
 */
function throughOwnColumns(
  tables: LoadedTables,
  posts: readonly SimulatorPost[],
): { tables: LoadedTables; problems: string[] } {
  const problems: string[] = [];
  const columns = new Map<string, string>();
  for (const field of new Set(posts.flatMap((post) => Object.keys(post.fields)))) {
    const own = ownColumn(field);
    if (own === undefined) {
      problems.push(`field ${JSON.stringify(field)} is not a plain name: the soak has no column for it`);
      continue;
    }
    columns.set(field, own);
    const recorded = tables.columns.get(field);
    if (recorded !== undefined && recorded !== own) {
      problems.push(`field ${field} is in column ${recorded}; the naming rule gives it ${own}`);
    }
  }
  return { tables: { ...tables, columns }, problems };
}

/** One organization of a schema that several load (soak --organizations): the rows and posts a ledger keeps. */
export interface LedgerOrganization {
  /** Its key (`_org`): the ledger reads its rows only. */
  readonly org: string;
  /** Its token at the simulator: its posts, and whose figures a revision restates. */
  readonly token: string;
  /** The filters it always loads with, as the API names them (the brands of a --reset come on top). */
  readonly filters: Omit<ReportParams, 'start_date' | 'end_date'>;
  /** Its field selection: whether a field is loaded (every field when absent). */
  readonly keep?: (field: string) => boolean;
}

/**
 * The checker's own record of what must be in the tables: every window ever loaded and not replaced since, and
 * which figures it holds. It is kept from the simulator's truth and the tables alone, never from the
 * connector's state tables, so a run that lost a window together with its record is caught.
 *
 * Figures change only between runs (late data: `revise`), each change opening an epoch whose truth is kept. A
 * window load holds the figures of the epoch its report was created in; a report is never older than the one
 * the window last loaded from, so a window moves forward through the epochs, never back. After a run, each
 * window must hold exactly the truth of one epoch from its ledger epoch to the current one (a window it never
 * held may also be empty: not loaded yet); a ledger window found empty is a loss.
 */
export class Ledger {
  readonly #sim: RunningSimulator;
  readonly #schema: string;
  readonly #range: ReportParams;
  readonly #grid: readonly Window[];
  /** Each epoch's truth for the whole range, unfiltered, by post date. */
  readonly #epochs: SimulatorPost[][] = [];
  readonly #entries = new Map<string, LedgerEntry>();
  #brands: readonly string[] | null = null;
  #organization: LedgerOrganization | undefined;

  /** With `organization`, that organization's rows and posts only, under its filters and field selection. */
  constructor(
    sim: RunningSimulator,
    schema: string,
    range: { from: string; to: string },
    grid: readonly Window[],
    organization?: LedgerOrganization,
  ) {
    this.#sim = sim;
    this.#schema = schema;
    this.#range = { ...organization?.filters, start_date: range.from, end_date: range.to };
    this.#grid = grid;
    this.#organization = organization;
    this.#epochs.push(sim.referencePosts(this.#range, organization?.token));
  }

  get epoch(): number {
    return this.#epochs.length - 1;
  }

  /** Late data: restates the figures of `dates` and opens a new epoch. */
  revise(dates: readonly string[]): void {
    const token = this.#organization?.token;
    for (const date of new Set(dates)) this.#sim.reviseFigures(date, token);
    this.#epochs.push(this.#sim.referencePosts(this.#range, token));
  }

  /**
   * A --reset completed, with new brands or those it had (null: none): nothing loaded before it may remain, so
   * every window it holds now was loaded by it.
   */
  reset(brands: readonly string[] | null): void {
    this.#entries.clear();
    this.#brands = brands;
  }

  /** The organization was renamed: its rows are read under `org` from now on, the windows it held the same. */
  rename(org: string): void {
    if (this.#organization === undefined) throw new Error('a ledger of no organization cannot be renamed');
    this.#organization = { ...this.#organization, org };
  }

  truth(epoch: number, window: Window): SimulatorPost[] {
    const brands = this.#brands;
    return (this.#epochs[epoch] ?? []).filter(
      (post) =>
        post.date >= window.start &&
        post.date <= window.end &&
        (brands === null || brands.includes(String(post.fields.brand))),
    );
  }

  /** What the tables hold of the truth: the fields the organization's selection keeps. */
  #expected(epoch: number, window: Window): SimulatorPost[] {
    const posts = this.truth(epoch, window);
    const keep = this.#organization?.keep;
    if (keep === undefined) return posts;
    return posts.map((post) => ({
      ...post,
      fields: Object.fromEntries(Object.entries(post.fields).filter(([field]) => keep(field))),
      // custom_segments is a field as any other: a selection that leaves it out loads no segments.
      segments: keep('custom_segments') ? post.segments : [],
    }));
  }

  /** The ids of the whole range's posts (any epoch: revisions keep every post). */
  #dates(): Map<string, string> {
    return new Map((this.#epochs[0] ?? []).map((post) => [post.id, post.date]));
  }

  /**
   * Checks the tables after a run and moves the ledger to what they hold. `committedByLog`: windows the run's
   * log said it committed, which must hold data now.
   */
  async check(pool: pg.Pool, committedByLog: ReadonlySet<string>): Promise<LedgerCheck> {
    const problems: string[] = [];
    const read: LoadedTables | null = (await schemaReady(pool, this.#schema))
      ? await readTables(pool, this.#schema, undefined, this.#organization?.org)
      : null;
    let tables: LoadedTables | null = null;
    if (read !== null) {
      const own = throughOwnColumns(read, this.#epochs.at(-1) ?? []);
      tables = own.tables;
      problems.push(...own.problems);
    }
    const loadedIds = new Map<string, string[]>();
    if (tables !== null) {
      problems.push(...tables.duplicates.map((id) => `post ${id} is loaded twice`));
      const dates = this.#dates();
      for (const id of tables.rows.keys()) {
        const date = dates.get(id);
        const window =
          date === undefined ? undefined : this.#grid.find((w) => date >= w.start && date <= w.end);
        if (window === undefined) {
          problems.push(`post ${id} is loaded but lies in no window of the range`);
          continue;
        }
        const key = windowKey(window);
        loadedIds.set(key, [...(loadedIds.get(key) ?? []), id]);
      }
    }
    for (const window of this.#grid) {
      const key = windowKey(window);
      const entry = this.#entries.get(key);
      const ids = loadedIds.get(key) ?? [];
      const from = entry?.epoch ?? 0;
      if (ids.length === 0) {
        // Empty is right for a window never loaded, or one whose truth is empty.
        const lost = entry !== undefined && this.truth(entry.epoch, window).length > 0;
        if (lost) problems.push(`window ${key} was loaded (epoch ${entry.epoch}) but its posts are gone`);
        else if (committedByLog.has(key) && this.truth(this.epoch, window).length > 0) {
          problems.push(`window ${key} was logged as committed but holds no posts`);
        }
        continue;
      }
      // The latest epoch that matches: a window whose dates no revision touched holds every epoch's figures.
      let matched: number | null = null;
      for (let epoch = this.epoch; epoch >= from && matched === null; epoch -= 1) {
        if (tables !== null && comparePosts(tables, this.#expected(epoch, window), ids).length === 0)
          matched = epoch;
      }
      if (matched === null) {
        const lines = tables === null ? [] : comparePosts(tables, this.#expected(this.epoch, window), ids);
        problems.push(
          `window ${key} holds the figures of no epoch from ${from} to ${this.epoch}; against the current truth: ${lines.slice(0, 5).join('; ')}`,
        );
        continue;
      }
      this.#entries.set(key, { window, epoch: matched });
    }
    return { problems, windows: this.#entries.size, posts: tables?.rows.size ?? 0 };
  }

  /** After the episode's final run: every window of the range holds the current truth. */
  async checkComplete(pool: pg.Pool): Promise<LedgerCheck> {
    const check = await this.check(pool, new Set());
    const problems = [...check.problems];
    for (const window of this.#grid) {
      const entry = this.#entries.get(windowKey(window));
      const expected = this.truth(this.epoch, window).length;
      if (entry === undefined && expected > 0) problems.push(`window ${windowKey(window)} is not loaded`);
      else if (entry !== undefined && entry.epoch !== this.epoch) {
        problems.push(
          `window ${windowKey(window)} holds the figures of epoch ${entry.epoch}, not the current ${this.epoch}`,
        );
      }
    }
    return { ...check, problems };
  }
}
