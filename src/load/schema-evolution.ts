/*
 * Schema evolution of the posts table: a field seen for the first time gets a nullable column of its declared
 * type when the documentation names it (declared-types.ts), else typed from its values (field-types.ts); a bigint
 * column widens to numeric when a value needs it, and an undocumented field's bigint or numeric column to text when
 * a string comes, partition by partition (column-retype.ts). The DDL runs in its own
 * short transaction under a transaction-level advisory lock keyed by the schema, and re-reads the catalog
 * under that lock, so windows staging concurrently (in this process or another) add each column once.
 *
 * Columns for undocumented fields are budgeted (ColumnBudget): every organization of a schema shares posts, and
 * one organization's API must not use up its 1,600 columns for all. A field beyond the budget, or whose column
 * would need a widening beyond the run's, is kept with its exact values in EXTRA_FIELDS_COLUMN, and named in the
 * log once a run. The budget is decided per new field, never per value: a page whose fields all have columns
 * costs what it did.
 *
 * Values a column cannot take fail the window: DataError('FIELD_TYPE_MISMATCH') naming the field, its column
 * type, the value's kind, the window and the page. A demanding user wants to know, not to find later that
 * some values were parked in a side column nobody reads. The remedy is explicit: an operator widens the
 * column (ALTER TABLE … TYPE text or jsonb, posts_latest dropped before and made again after, as docs/storage.md
 * shows; types are read from the catalog, the loader follows) and re-runs.
 * A field whose values are all null gets no column until a non-null value types it: its rows read NULL anyway.
 * The documented fields a run loads are known before any page: their columns are made at its preparation
 * (addDeclaredColumns), so that pages of documented records need no DDL.
 */

import type pg from 'pg';
import { answeredWith } from '../error-policy.js';
import { DataError, oneLine } from '../errors.js';
import type { Logger } from '../logger.js';
import { type PagePosts, PageTape, VALUE_STRIDE } from '../model/page-tape.js';
import type { MappedPost } from '../model/post-record.js';
import { chooseColumnName, isPlainColumnName } from './column-naming.js';
import { retypeColumn } from './column-retype.js';
import { withTransaction } from './database.js';
import type { DeclaredType } from './declared-types.js';
import {
  type ColumnType,
  columnTypeFor,
  columnTypeOf,
  fitOf,
  isColumnDate,
  kindOf,
  tapeKindOf,
  type ValueKind,
} from './field-types.js';
import { remakeLatestViews } from './latest-views.js';
import { ddlLockKey, lockForTransaction } from './locks.js';
import type { Target } from './migrate.js';
import { partitionKeys } from './period-partitions.js';
import * as queries from './queries.js';
import { scopeOf } from './scope.js';
import { qualified } from './table-names.js';

/** A field's column in the posts table. */
export interface ColumnInfo {
  readonly column: string;
  readonly type: ColumnType;
  /** The catalog's spelling of the type (format_type), for stage columns of hand-set types. */
  readonly sqlType: string;
  /** False when the registry names a column that is not (or no longer) in posts. */
  readonly exists: boolean;
  /** The organization whose page added the column (null or absent: added before organizations were recorded). */
  readonly org?: string | null;
}

export interface Registry {
  readonly byField: ReadonlyMap<string, ColumnInfo>;
  /** Every column name of posts plus every registered one: new names must avoid them. */
  readonly taken: ReadonlySet<string>;
}

export interface ColumnChange {
  readonly field: string;
  readonly action: 'add' | 'widen';
  readonly type: Exclude<ColumnType, 'other'>;
}

export interface PagePlan {
  /** The fields with a non-null value in the page that go to their columns, with the column type they need. */
  readonly fields: ReadonlyMap<string, ColumnType>;
  readonly changes: readonly ColumnChange[];
  /**
   * The fields of the page kept in EXTRA_FIELDS_COLUMN instead of a column of their own: no room is left for their
   * column (ColumnBudget), or their column would need a widening beyond the run's. Empty almost always.
   */
  readonly spilled: readonly string[];
}

/** The jsonb column of posts that keeps, keyed by the API's field name, the fields that have no column of their own. */
export const EXTRA_FIELDS_COLUMN = '_extra_fields';

/**
 * How many columns of its own an undocumented field may get (documented fields always get theirs). Every
 * organization of a schema shares the columns of posts, and PostgreSQL allows 1,600 a table, dropped ones
 * included: `columns` caps the columns of undocumented fields all organizations together add, and one organization
 * adds at most a quarter of them (organizationShare), so that no organization's API uses up the room of the
 * others. A column one organization added serves every other that sends the field, at no cost to them.
 */
export interface ColumnBudget {
  readonly columns: number;
  /** The organization whose pages are planned. */
  readonly org: string;
  /** The widenings of posts' columns still allowed in this run: each rewrites every partition of the schema. */
  readonly wideningsLeft: number;
}

export const DEFAULT_COLUMN_BUDGET = 1000;
export const DEFAULT_WIDENINGS_PER_RUN = 20;

/** PostgreSQL's most columns a table may have, dropped ones included (MaxHeapAttributeNumber). */
const MAX_TABLE_COLUMNS = 1600;
/** Room kept below it for documented fields and the connector's own columns, whatever the budget says. */
const RESERVED_COLUMNS = 100;

/** The columns one organization may add: a quarter of the budget. */
export function organizationShare(columns: number): number {
  return Math.max(1, Math.floor(columns / 4));
}

/** The fields whose columns count against the budget: undocumented fields with a column, all and `org`'s. */
function budgetUsed(
  registry: Registry,
  declared: ReadonlyMap<string, DeclaredType>,
  org: string,
): { all: number; own: number } {
  let all = 0;
  let own = 0;
  for (const [field, info] of registry.byField) {
    if (!info.exists || declared.has(field)) continue;
    all++;
    if (info.org === org) own++;
  }
  return { all, own };
}

/** Where a page comes from, for error messages. */
export interface PagePlace {
  readonly window: string;
  readonly page: number;
}

/** Reads the field→column registry with the current column types of posts. */
export async function readRegistry(client: pg.Pool | pg.PoolClient, target: Target): Promise<Registry> {
  const result = await client.query<{
    field: string | null;
    column_name: string;
    sql_type: string | null;
    org: string | null;
  }>(queries.readRegistry(target.schema), [qualified(target.schema, 'posts')]);
  const byField = new Map<string, ColumnInfo>();
  const taken = new Set<string>();
  for (const row of result.rows) {
    taken.add(row.column_name);
    if (row.field === null) continue;
    byField.set(row.field, {
      column: row.column_name,
      type: row.sql_type === null ? 'other' : columnTypeOf(row.sql_type),
      sqlType: row.sql_type ?? 'text',
      exists: row.sql_type !== null,
      org: row.org,
    });
  }
  return { byField, taken };
}

/**
 * Types the fields of a page against the registry: which columns the page needs, which must be added or
 * widened first. Throws DataError('FIELD_TYPE_MISMATCH') for a value no column type here can take. A new field's
 * type comes from every value the page holds, not from the first: the same posts in any order give the same
 * columns (strings and numbers make text, whole numbers and decimals numeric, a JSON document anywhere jsonb).
 */
export function planPage(
  posts: PagePosts,
  registry: Registry,
  place: PagePlace,
  declared: ReadonlyMap<string, DeclaredType> = new Map(),
  budget?: ColumnBudget,
): PagePlan {
  const kinds = posts instanceof PageTape ? tapeKinds(posts) : postKinds(posts);
  const types = new Map<string, ColumnType>();
  const changes: ColumnChange[] = [];
  const spilled: string[] = [];
  // Counted only for a page that brings a field without a column: most pages bring none.
  let used: { all: number; own: number } | undefined;
  let widenings = 0;
  for (const [field, mask] of kinds) {
    const info = registry.byField.get(field);
    const existing = info?.exists === true;
    if (!existing && budget !== undefined && !declared.has(field)) {
      used ??= budgetUsed(registry, declared, budget.org);
      if (used.all >= budget.columns || used.own >= organizationShare(budget.columns)) {
        spilled.push(field);
        continue;
      }
      used.all++;
      used.own++;
    }
    let type: ColumnType = existing ? info.type : (declared.get(field) ?? joinedType(mask));
    // Strings with numbers make a text column whichever came first: a bigint or numeric column an earlier page
    // made is widened to text, its numbers printed as numeric::text prints them, the form numbers staged into a
    // text column take too (number-text.ts). A documented field keeps its documented type.
    if (
      (type === 'bigint' || type === 'numeric') &&
      (mask & KIND_BITS.string) !== 0 &&
      !declared.has(field)
    ) {
      type = 'text';
    }
    let widen = false;
    for (const kind of KINDS) {
      if ((mask & KIND_BITS[kind]) === 0) continue;
      const fit = fitOf(type, kind);
      if (fit === 'mismatch') throw mismatch(posts, field, type, place);
      if (fit === 'widen') widen = true;
    }
    if (widen) type = 'numeric';
    if (type === 'date') checkDates(posts, field, place);
    if (type === 'other') {
      types.set(field, type);
      continue;
    }
    if (!existing) changes.push({ field, action: 'add', type });
    else if (widens(info.type, type)) {
      if (budget !== undefined && widenings >= budget.wideningsLeft) {
        spilled.push(field);
        continue;
      }
      widenings++;
      changes.push({ field, action: 'widen', type });
    }
    types.set(field, type);
  }
  return { fields: types, changes, spilled };
}

/** The kinds of values each field holds in the page, as a bit set: one pass, no allocation per value. */
function postKinds(posts: readonly MappedPost[]): Map<string, number> {
  const kinds = new Map<string, number>();
  for (let i = 0; i < posts.length; i++) {
    const fields = posts[i]!.fields;
    for (const field in fields) {
      const value = fields[field];
      if (value === null || value === undefined) continue;
      const bit = KIND_BITS[kindOf(value)];
      const seen = kinds.get(field);
      if (seen === undefined) kinds.set(field, bit);
      else if ((seen & bit) === 0) kinds.set(field, seen | bit);
    }
  }
  return kinds;
}

/** The same from a tape's summary of its fields, in the same order: the decoder saw every value once already. */
function tapeKinds(tape: PageTape): Map<string, number> {
  const kinds = new Map<string, number>();
  for (let f = 0; f < tape.fields.length; f++) {
    const mask = tape.kinds[f]!;
    let bits = 0;
    for (let kind = 0; mask >>> kind !== 0; kind++) {
      if ((mask & (1 << kind)) !== 0) bits |= KIND_BITS[tapeKindOf(kind)];
    }
    kinds.set(tape.fields[f]!, bits);
  }
  return kinds;
}

/** Calls `visit` with each value of `field` other than null, in the order of the page, until it returns true. */
function findValue(
  posts: PagePosts,
  field: string,
  visit: (kind: ValueKind, id: () => string) => boolean,
): void {
  if (posts instanceof PageTape) {
    const f = posts.fields.indexOf(field);
    if (f < 0) return;
    const values = posts.values;
    for (let i = 0; i < posts.length; i++) {
      for (let v = posts.postValues[i]!; v < posts.postValues[i + 1]!; v++) {
        if (values[v * VALUE_STRIDE] !== f) continue;
        if (visit(tapeKindOf(values[v * VALUE_STRIDE + 1]!), () => posts.id(i))) return;
      }
    }
    return;
  }
  for (let i = 0; i < posts.length; i++) {
    const value = posts[i]!.fields[field];
    if (value === null || value === undefined) continue;
    if (visit(kindOf(value), () => posts[i]!.id)) return;
  }
}

/** Whether a change is still to be made to posts as the registry shows it. */
function isNeeded(change: ColumnChange, registry: Registry): boolean {
  const info = registry.byField.get(change.field);
  if (change.action === 'add') return info?.exists !== true;
  return info?.exists === true && widens(info.type, change.type);
}

// The widenings the loader makes: bigint → numeric → text, each keeping every value (as digits in text).
const WIDTH: Readonly<Partial<Record<ColumnType, number>>> = { bigint: 1, numeric: 2, text: 3 };

/** True when a column of type `from` is widened to `to`. */
function widens(from: ColumnType, to: ColumnType): boolean {
  const a = WIDTH[from];
  const b = WIDTH[to];
  return a !== undefined && b !== undefined && a < b;
}

const KINDS: readonly ValueKind[] = ['int64', 'bignum', 'decimal', 'string', 'boolean', 'json'];
const KIND_BITS: Readonly<Record<ValueKind, number>> = {
  int64: 1,
  bignum: 2,
  decimal: 4,
  string: 8,
  boolean: 16,
  json: 32,
};
const NUMBERS = KIND_BITS.int64 | KIND_BITS.bignum | KIND_BITS.decimal;

/** The type of a new column for values of these kinds, whatever their order; booleans mixed with others fail. */
function joinedType(mask: number): Exclude<ColumnType, 'other'> {
  const single = KINDS.find((kind) => KIND_BITS[kind] === mask);
  if (single !== undefined) return columnTypeFor(single);
  if ((mask & KIND_BITS.json) !== 0) return 'jsonb';
  if ((mask & ~NUMBERS) === 0) return 'numeric';
  // Strings with numbers: text takes the numbers as their digits. Booleans with either: text, which refuses them.
  return 'text';
}

/** The error for the first post whose value of `field` a column of `type` cannot take. */
function mismatch(posts: PagePosts, field: string, type: ColumnType, place: PagePlace): DataError {
  let error: DataError | undefined;
  findValue(posts, field, (kind, id) => {
    if (fitOf(type, kind) !== 'mismatch') return false;
    error = new DataError(
      'FIELD_TYPE_MISMATCH',
      `field ${JSON.stringify(field)} holds a ${kind} value in post ${id()} of window ${place.window} page ${place.page}, but its column is ${type}: widen the column (ALTER TABLE posts … TYPE text or jsonb, in one transaction with posts_latest dropped before and made again after, as the storage model shows) and re-run`,
    );
    return true;
  });
  if (error === undefined) throw new Error(`no value of ${field} mismatches ${type}`);
  return error;
}

function checkDates(posts: PagePosts, field: string, place: PagePlace): void {
  if (!(posts instanceof PageTape)) {
    for (let i = 0; i < posts.length; i++) {
      const value = posts[i]!.fields[field];
      if (typeof value === 'string' && !isColumnDate(value))
        throw notADate(field, value, posts[i]!.id, place);
    }
    return;
  }
  const f = posts.fields.indexOf(field);
  const values = posts.values;
  // A page's posts mostly share a date: a date checked already is not checked again.
  let last: string | undefined;
  for (let i = 0; i < posts.length; i++) {
    for (let v = posts.postValues[i]!; v < posts.postValues[i + 1]!; v++) {
      if (values[v * VALUE_STRIDE] !== f) continue;
      // A post holds a field once: its other values need no look.
      if (tapeKindOf(values[v * VALUE_STRIDE + 1]!) === 'string') {
        const value = posts.valueText(v);
        if (value !== last && !isColumnDate(value)) throw notADate(field, value, posts.id(i), place);
        last = value;
      }
      break;
    }
  }
}

function notADate(field: string, value: string, id: string, place: PagePlace): DataError {
  return new DataError(
    'FIELD_TYPE_MISMATCH',
    `field ${JSON.stringify(field)} holds ${JSON.stringify(oneLine(value, 40))} in post ${id} of window ${place.window} page ${place.page}, but its column is date: the API documents dates as YYYY-MM-DD`,
  );
}

/**
 * Applies the changes to posts that are still needed under the DDL lock (none needed as posts is now: returns at
 * once, without the lock), records new fields in the registry
 * (`owned`: the names no renamed field may take besides the registered fields: documented fields, the page's),
 * logs the changes once committed (the columns added as one line: a first page adds dozens), and returns the
 * fresh registry.
 */
export async function evolvePosts(
  pool: pg.Pool,
  target: Target,
  logger: Logger,
  changes: readonly ColumnChange[],
  signal?: AbortSignal,
  owned: Iterable<string> = [],
  budget?: { readonly budget: ColumnBudget; readonly declared: ReadonlyMap<string, DeclaredType> },
): Promise<Registry> {
  // Processes loading side by side meet the same new fields in their first pages: when another one has made
  // these changes already, nothing waits for the DDL lock, which a commit holds while it runs. The caller plans
  // its page again against the registry returned.
  const current = await readRegistry(pool, target);
  if (!changes.some((change) => isNeeded(change, current))) return current;
  return applyChanges(pool, target, logger, changes, signal, owned, budget);
}

/**
 * The adds among `ordered` that fit, as posts is under the DDL lock: the budget as planPage counts it (another
 * process may have used the room since the page was planned), and PostgreSQL's own limit less the reserve.
 * Documented fields always get their column.
 */
async function fitting(
  client: pg.PoolClient,
  target: Target,
  registry: Registry,
  ordered: readonly ColumnChange[],
  budget: { readonly budget: ColumnBudget; readonly declared: ReadonlyMap<string, DeclaredType> },
): Promise<ColumnChange[]> {
  const { budget: room, declared } = budget;
  const used = budgetUsed(registry, declared, room.org);
  const { rows } = await client.query<{ n: number }>(queries.columnSlots, [
    qualified(target.schema, 'posts'),
  ]);
  let slots = rows[0]?.n ?? 0;
  const kept: ColumnChange[] = [];
  for (const change of ordered) {
    if (
      change.action === 'add' &&
      !declared.has(change.field) &&
      registry.byField.get(change.field)?.exists !== true
    ) {
      if (
        used.all >= room.columns ||
        used.own >= organizationShare(room.columns) ||
        slots >= MAX_TABLE_COLUMNS - RESERVED_COLUMNS
      )
        continue;
      used.all++;
      used.own++;
      slots++;
    }
    kept.push(change);
  }
  return kept;
}

/** evolvePosts' DDL transaction: the changes still needed under the DDL lock, made and logged. */
async function applyChanges(
  pool: pg.Pool,
  target: Target,
  logger: Logger,
  changes: readonly ColumnChange[],
  signal: AbortSignal | undefined,
  owned: Iterable<string>,
  budget?: { readonly budget: ColumnBudget; readonly declared: ReadonlyMap<string, DeclaredType> },
): Promise<Registry> {
  const org = budget?.budget.org ?? scopeOf(target).org;
  // Plain names first: a field whose name is a column name takes it before any renamed field is named.
  const ordered = [...changes].sort(
    (a, b) => Number(!isPlainColumnName(a.field)) - Number(!isPlainColumnName(b.field)),
  );
  for (let attempt = 1; ; attempt++) {
    const added: { field: string; column: string; type: ColumnType }[] = [];
    const widened: {
      field: string;
      column: string;
      from: ColumnType;
      to: ColumnType;
      partitions: number;
      copyMs: number;
      swapMs: number;
    }[] = [];
    let fresh: Registry;
    try {
      fresh = await withTransaction(pool, signal, async (client) => {
        await lockForTransaction(client, ddlLockKey(target.schema));
        const registry = await readRegistry(client, target);
        const taken = new Set(registry.taken);
        const reserved = new Set([...owned, ...registry.byField.keys()]);
        const unregistered: { field: string; column: string }[] = [];
        const allowed =
          budget === undefined ? ordered : await fitting(client, target, registry, ordered, budget);
        for (const change of allowed) {
          const info = registry.byField.get(change.field);
          if (change.action !== 'add' || info?.exists) continue;
          const column = info?.column ?? chooseColumnName(change.field, taken, reserved);
          taken.add(column);
          if (!info) unregistered.push({ field: change.field, column });
          added.push({ field: change.field, column, type: change.type });
        }
        // One statement for every new column: a first page (or a run's documented fields) adds dozens, and each
        // statement on posts locks it with its partitions and makes every session read its definition again.
        if (added.length > 0) {
          await client.query(queries.addColumns(target.schema, 'posts', added));
          // The views of the latest rows gain the new columns in the same transaction (src/load/latest-views.ts).
          await remakeLatestViews(client, target.schema, target.postIdField);
        }
        if (unregistered.length > 0) {
          await client.query(queries.registerFields(target.schema), [
            unregistered.map((u) => u.field),
            unregistered.map((u) => u.column),
            org,
          ]);
        }
        for (const change of ordered) {
          const info = registry.byField.get(change.field);
          if (change.action === 'widen' && info?.exists && widens(info.type, change.type)) {
            const result = await retypeColumn(
              client,
              {
                schema: target.schema,
                table: 'posts',
                column: info.column,
                type: change.type,
                ...partitionKeys(target.postIdField),
                postIdField: target.postIdField,
              },
              signal === undefined ? {} : { signal },
            );
            widened.push({
              field: change.field,
              column: info.column,
              from: info.type,
              to: change.type,
              ...result,
            });
          }
        }
        return added.length + widened.length > 0 ? await readRegistry(client, target) : registry;
      });
    } catch (error) {
      // Someone outside the lock (an operator) added the same column name meanwhile: read again, choose again.
      if (answeredWith(error, 'duplicate column') && attempt < 3) continue;
      throw error;
    }
    if (added.length > 0)
      logger.info({ count: added.length, columns: added }, 'new fields: columns added to posts');
    for (const { from, to, ...w } of widened) logger.info(w, `column widened from ${from} to ${to}`);
    for (const a of added) {
      // A renamed field named before this field first came (by an older version, or in a page without this field
      // when the name is not documented) keeps the name: the mapping of a schema does not change under it.
      if (isPlainColumnName(a.field) && a.column !== a.field) {
        logger.warn(
          { field: a.field, column: a.column },
          `the column named like field ${JSON.stringify(a.field)} holds another field: see field_columns`,
        );
      }
    }
    return fresh;
  }
}

/**
 * Gives the documented fields of `fields` their columns of declared type before any page arrives, all in one DDL
 * transaction, so that no page of a documented record needs DDL and processes loading side by side never wait for
 * one another's columns. Reads first and takes the DDL lock only when a column is missing: a schema set up already
 * costs one read. A column that exists keeps its type (an older schema's bigint total_spend stays bigint until a
 * value needs more). Returns the registry, fresh.
 */
export async function addDeclaredColumns(
  pool: pg.Pool,
  target: Target,
  logger: Logger,
  fields: ReadonlyMap<string, DeclaredType>,
  signal?: AbortSignal,
): Promise<Registry> {
  const registry = await readRegistry(pool, target);
  const changes: ColumnChange[] = [];
  for (const [field, type] of fields) {
    if (registry.byField.get(field)?.exists !== true) changes.push({ field, action: 'add', type });
  }
  if (changes.length === 0) return registry;
  return applyChanges(pool, target, logger, changes, signal, fields.keys());
}
