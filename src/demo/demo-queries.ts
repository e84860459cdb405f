import pg from 'pg';
import { formatTable } from './text-table.js';

/** The example queries the demo runs and shows; the README's storage model section uses the same ones. */
export interface DemoQuery {
  readonly title: string;
  readonly sql: string;
}

/*
 * The queries read the latest row of each post (posts_latest, post_custom_segments_latest: migration 012): a post in
 * several windows is counted once, with its latest figures.
 */

/** A few loaded posts, newest first. */
export function sampleRowsQuery(schema: string): DemoQuery {
  const s = pg.escapeIdentifier(schema);
  return {
    title: 'A few loaded posts',
    sql: `SELECT platform_post_id, date_captured, brand, channel, status, total_spend, currency
  FROM ${s}.posts_latest ORDER BY date_captured DESC, platform_post_id LIMIT 5`,
  };
}

/**
 * Spend by organization, brand and ISO week (spend is in each post's own currency, so it is grouped by currency
 * too).
 */
export function spendByBrandAndWeekQuery(schema: string): DemoQuery {
  const s = pg.escapeIdentifier(schema);
  return {
    title: 'Spend by brand and week',
    sql: `SELECT _org, brand, date_trunc('week', date_captured::date)::date AS week, currency, sum(total_spend) AS spend
  FROM ${s}.posts_latest WHERE total_spend IS NOT NULL
  GROUP BY _org, brand, week, currency ORDER BY _org, week, brand, currency`,
  };
}

/** Posts per custom segment value. */
export function postsPerSegmentQuery(schema: string): DemoQuery {
  const s = pg.escapeIdentifier(schema);
  return {
    title: 'Posts per custom segment value',
    sql: `SELECT _org, name, value, count(DISTINCT platform_post_id) AS posts
  FROM ${s}.post_custom_segments_latest GROUP BY _org, name, value ORDER BY _org, name, value`,
  };
}

/** Preflight versus inflight posts, with how many of the inflight ones have spend. */
export function preflightVersusInflightQuery(schema: string): DemoQuery {
  const s = pg.escapeIdentifier(schema);
  return {
    title: 'Preflight versus inflight posts',
    sql: `SELECT _org, status, count(*) AS posts, count(total_spend) AS with_spend
  FROM ${s}.posts_latest GROUP BY _org, status ORDER BY _org, status`,
  };
}

/** Runs a query and renders its result as an aligned text table, values as PostgreSQL prints them. */
export async function renderQuery(client: pg.ClientBase, query: DemoQuery, maxRows = 10): Promise<string> {
  // Every value as text, so that bigint ids and numeric spend print with all their digits.
  const result = await client.query({
    text: query.sql,
    rowMode: 'array',
    types: { getTypeParser: () => textValue },
  });
  const header = result.fields.map((f) => f.name);
  const rows = (result.rows as unknown[][])
    .slice(0, maxRows)
    .map((row) => row.map((v) => (v === null ? '' : String(v))));
  const out = [formatTable(header, rows)];
  if (result.rows.length > maxRows) out.push(`(and ${result.rows.length - maxRows} more)`);
  return out.join('\n');
}

function textValue(value: string): string {
  return value;
}
