import type pg from 'pg';
import type { Loader } from '../../../src/load/loader.js';
import type { Target } from '../../../src/load/migrate.js';
import type { Scope } from '../../../src/load/scope.js';
import type { StagedPage, StageShape } from '../../../src/load/staging.js';
import { type KnownReport, receiveReport } from '../../../src/load/window-state.js';
import { createLogger, type Logger } from '../../../src/logger.js';
import type { CustomSegment, FieldValue, MappedPost } from '../../../src/model/post-record.js';
import type { Window } from '../../../src/model/window.js';

export const target: Target = { schema: 'post_reports', postIdField: 'platform_post_id' };

/** A logger whose lines the test can read. */
export function captureLogger(): { logger: Logger; lines: () => Array<Record<string, unknown>> } {
  const raw: string[] = [];
  const logger = createLogger({ level: 'debug', destination: { write: (line: string) => raw.push(line) } });
  return { logger, lines: () => raw.map((l) => JSON.parse(l) as Record<string, unknown>) };
}

/** A mapped post with a null-prototype fields object, as the extractor builds it. */
export function post(
  id: string | number,
  fields: Record<string, FieldValue> = {},
  segments: CustomSegment[] = [],
): MappedPost {
  return {
    id: String(id),
    fields: Object.assign(Object.create(null) as Record<string, FieldValue>, fields),
    segments,
  };
}

/** Stages one page: prepared, then written, as a run does. */
export async function stagePage(
  loader: Loader,
  window: Window,
  page: StagedPage,
  signal?: AbortSignal,
): Promise<void> {
  await loader.writePage(await loader.preparePage(window, page, signal), signal);
}

/**
 * Opens a window for a report and stages `pages` in order, then returns. Each page is written into the stage as
 * the one before left it, as a run writes them (pipelined while its columns fit).
 */
export async function stageAll(
  loader: Loader,
  window: Window,
  reportId: string,
  pages: ReadonlyArray<readonly MappedPost[]>,
): Promise<void> {
  const progress = await loader.openWindow(window, reportId);
  let stage: StageShape | undefined;
  for (let i = progress.pagesStaged; i < pages.length; i++) {
    const page = { index: i, nextPage: i + 1 < pages.length ? `page-${i + 1}` : null, posts: pages[i]! };
    stage = await loader.writePage(await loader.preparePage(window, page), undefined, stage);
  }
}

/**
 * Stages `window` from report `reportId`, which the window first received at `receivedAt` (the reuse period
 * `reuseMs`), with one page of posts `ids` whose brand names the report, as an attempt does; returns the report.
 */
export async function stageReceived(
  pool: pg.Pool,
  loader: Loader,
  scope: Scope,
  received: {
    readonly window: Window;
    readonly reportId: string;
    readonly at: string;
    readonly reuseMs: number;
  },
  ids: readonly number[],
): Promise<KnownReport> {
  const { window, reportId } = received;
  const report = await receiveReport(pool, scope, window, reportId, new Date(received.at), received.reuseMs);
  await stageAll(loader, window, reportId, [ids.map((id) => post(id, { brand: reportId }))]);
  return report;
}

/** Stages and commits one window. */
export async function load(
  loader: Loader,
  window: Window,
  reportId: string,
  pages: ReadonlyArray<readonly MappedPost[]>,
): Promise<number> {
  await stageAll(loader, window, reportId, pages);
  return (await loader.commitWindows([window])).rows;
}

/** posts and segments as comparable text, without _loaded_at (a reload has a new one). */
export async function snapshot(
  pool: pg.Pool,
  schema = target.schema,
): Promise<{ posts: string[]; segments: string[] }> {
  const posts = await pool.query<{ row: string }>(
    `SELECT (to_jsonb(p) - '_loaded_at')::text AS row FROM ${schema}.posts p ORDER BY 1`,
  );
  const segments = await pool.query<{ row: string }>(
    `SELECT to_jsonb(s)::text AS row FROM ${schema}.post_custom_segments s ORDER BY 1`,
  );
  return { posts: posts.rows.map((r) => r.row), segments: segments.rows.map((r) => r.row) };
}

/** Post ids of a window, in order, as text. */
export async function idsOf(pool: pg.Pool, window: Window, schema = target.schema): Promise<string[]> {
  const result = await pool.query<{ id: string }>(
    `SELECT platform_post_id::text AS id FROM ${schema}.posts WHERE _window_start = $1 AND _window_end = $2 ORDER BY platform_post_id`,
    [window.start, window.end],
  );
  return result.rows.map((r) => r.id);
}
