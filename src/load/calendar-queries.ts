import type pg from 'pg';
import { DEFAULT_ORGANIZATION } from '../model/organization.js';
import { qualified } from './table-names.js';
import type { AttemptStatus } from './window-state.js';

/*
 * The loaded history day by day, for a picture of it (`status --calendar`, `--html`): one query over the run state
 * (report_windows), each window spread over its days in the database, never a query per day.
 */

type Queryable = Pick<pg.ClientBase, 'query'>;

/** What the rows of a day's window hold for that day: final, loaded before the day was over, or no rows. */
export type DayRows = 'final' | 'open' | 'none';

/** A day some window of the organization covers, with that window's state. */
export interface WindowDay {
  readonly org: string;
  /** YYYY-MM-DD. */
  readonly date: string;
  readonly windowStart: string;
  readonly windowEnd: string;
  /** The latest attempt on the window. */
  readonly status: AttemptStatus;
  readonly rows: DayRows;
  /** Posts loaded for the whole window (null: none loaded). */
  readonly rowCount: number | null;
  readonly loadedThrough: string | null;
  readonly lastError: string | null;
}

interface WindowDayRow {
  org: string;
  date: string;
  window_start: string;
  window_end: string;
  status: AttemptStatus;
  rows: DayRows;
  row_count: number | null;
  loaded_through: string | null;
  last_error: string | null;
}

/**
 * Every day from `from` to `to` (either null: unbounded) that a window of one of `orgs` covers, in order of
 * organization and date. Where windows of different extents overlap a day (the window size changed), the day is
 * the latest-changed window's; superseded windows are not read. A day is final for the loaded rows up to their
 * window's loaded_through (the data-age rule of window-state.ts: the last day that ended before the report was
 * made); a window loaded before ages were recorded has none and counts as final. Reads only; a schema from
 * before organizations (no org column) holds the default organization's windows.
 */
export async function readWindowDays(
  db: Queryable,
  schema: string,
  orgs: readonly string[],
  from: string | null,
  to: string | null,
): Promise<WindowDay[]> {
  const table = qualified(schema, 'report_windows');
  // A schema from before migration 008 has no org column; reading it through to_jsonb(w) instead would cost a
  // row's conversion per window, most of the query over years of daily windows.
  const { rows: has } = await db.query<{ org: boolean }>(
    `SELECT EXISTS (SELECT 1 FROM pg_attribute WHERE attrelid = to_regclass($1) AND attname = 'org'
                     AND NOT attisdropped) AS org`,
    [table],
  );
  const orgOf = has[0]?.org === true ? 'COALESCE(w.org, $4)' : '$4::text';
  const { rows } = await db.query<WindowDayRow>(
    `SELECT DISTINCT ON (o.org, d.day)
            o.org, to_char(d.day, 'YYYY-MM-DD') AS date,
            to_char(w.window_start, 'YYYY-MM-DD') AS window_start,
            to_char(w.window_end, 'YYYY-MM-DD') AS window_end, w.status,
            CASE WHEN w.row_count IS NULL THEN 'none'
                 WHEN w.loaded_through IS NULL OR d.day <= w.loaded_through THEN 'final'
                 ELSE 'open' END AS rows,
            w.row_count::float8 AS row_count, to_char(w.loaded_through, 'YYYY-MM-DD') AS loaded_through,
            w.last_error
       FROM ${table} w
      CROSS JOIN LATERAL (SELECT ${orgOf} AS org) o
      CROSS JOIN LATERAL generate_series(GREATEST(w.window_start, COALESCE($2::date, w.window_start)),
                                         LEAST(w.window_end, COALESCE($3::date, w.window_end)),
                                         interval '1 day') AS g(at)
      CROSS JOIN LATERAL (SELECT g.at::date AS day) d
      WHERE o.org = ANY($1::text[]) AND w.status <> 'superseded'
        AND ($2::date IS NULL OR w.window_end >= $2::date) AND ($3::date IS NULL OR w.window_start <= $3::date)
      ORDER BY o.org, d.day, w.updated_at DESC, w.window_start DESC`,
    [orgs, from, to, DEFAULT_ORGANIZATION],
  );
  return rows.map((r) => ({
    org: r.org,
    date: r.date,
    windowStart: r.window_start,
    windowEnd: r.window_end,
    status: r.status,
    rows: r.rows,
    rowCount: r.row_count,
    loadedThrough: r.loaded_through,
    lastError: r.last_error,
  }));
}
