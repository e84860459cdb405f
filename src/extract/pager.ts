import type { ApiClient, DeferredJson } from '../api/client.js';
import { SETTINGS } from '../config.js';
import { ApiError, DataError, EtlError } from '../errors.js';
import { BufferPool } from '../model/buffer-pool.js';
import { type PagePosts, PageTape, VALUE_STRIDE } from '../model/page-tape.js';
import { ExactNumber, type MappedPost } from '../model/post-record.js';
import { isRecord, kind } from './json-shape.js';
import { decodePage } from './page-decoder.js';
import { type MappingContext, mapRecords } from './record-mapping.js';

/**
 * One page of a DONE report: its posts, on a tape when read in one pass (page-decoder.ts), else mapped one by one,
 * and the token of the next page (null on the last).
 */
export interface ReportPage {
  /** 1 for the first page. */
  index: number;
  /** The page token this page was requested with; null for the first page. */
  token: string | null;
  nextPage: string | null;
  posts: PagePosts;
  /** Size of the response as received, in bytes. */
  bytes: number;
  /** How the page was read: for a run's count of what went the slow way. */
  reading: PageReading;
}

/**
 * How a page was read: in one pass (page-decoder.ts) or the full way (exact-json.ts, whose slow path is
 * lossless-json), and how many of its values (fields other than null) were read the full way.
 */
export interface PageReading {
  readonly onePass: boolean;
  readonly values: number;
  readonly valuesTheFullWay: number;
}

/** The values (fields other than null) of posts mapped the full way. */
function mappedValues(posts: readonly MappedPost[]): number {
  let values = 0;
  for (const post of posts) for (const key in post.fields) if (post.fields[key] !== null) values++;
  return values;
}

/** How a report's records become posts: the id field, the window (for messages) and the field selection. */
export type PostMapping = Omit<MappingContext, 'page'>;

export interface ReadPagesOptions {
  mapping: PostMapping;
  /** The first page, already downloaded by waitForReport; reading continues after it. */
  first?: ReportPage;
  /** A stored next_page token to resume from after a restart. */
  startToken?: string;
  /** Pages already read before startToken (the page read with it gets index startIndex + 1). */
  startIndex?: number;
  /** The most pages the report may have (default DEFAULT_MAX_REPORT_PAGES): a report that goes on fails. */
  maxPages?: number | undefined;
  signal?: AbortSignal;
}

/** The most posts a page may hold (spec: Limits). */
export const MAX_POSTS_PER_PAGE = 1000;

/**
 * The longest report id and page token taken, in characters: far beyond the service's (a UUID, a short cursor),
 * and short enough that a hostile answer cannot make every stored row (a report id is a column of each) or the
 * tokens a report's pages keep in memory grow without end.
 */
export const MAX_REPORT_ID_LENGTH = 256;
export const MAX_PAGE_TOKEN_LENGTH = 4096;

/** The most pages of one report read when no setting says (POST_REPORTS_MAX_REPORT_PAGES). */
export const DEFAULT_MAX_REPORT_PAGES = 100_000;

/** The path of a report; the id is opaque, so it is encoded as one path segment. */
export function reportPath(reportId: string): string {
  return `reports/posts/${encodeURIComponent(reportId)}`;
}

/** A report response (or one of its pages) downloaded: its size and bytes now, its body when asked. */
export interface FetchedReport {
  /** Size of the response as received, in bytes. */
  readonly bytes: number;
  /** The UTF-8 of the response text (see DeferredJson). */
  readonly utf8: Buffer;
  /** The body parsed; DataError('PAGE_MALFORMED') naming the report when it is not JSON. */
  body(): unknown;
}

/**
 * Fetches a report (or one of its pages); 400, 404 and 410 become ApiError('REPORT_GONE'): the v4 spec leaves the
 * answer to an unknown id or an invalid page value open, and a request the report cannot serve is not served by
 * asking again.
 */
export async function fetchReport(
  client: ApiClient,
  reportId: string,
  what: string,
  options: { token?: string | null; signal?: AbortSignal; bodies?: BufferPool },
): Promise<FetchedReport> {
  let response: DeferredJson;
  try {
    response = await client.getDeferredJson(reportPath(reportId), {
      ...(options.token ? { query: { page: options.token } } : {}),
      ...(options.signal ? { signal: options.signal } : {}),
      ...(options.bodies ? { bodies: options.bodies } : {}),
    });
  } catch (error) {
    if (error instanceof ApiError && (error.status === 400 || error.status === 404 || error.status === 410)) {
      throw new ApiError(
        'REPORT_GONE',
        `report ${reportId} is gone (${error.status} on ${what}): ${error.body === '' ? '(empty body)' : error.body}`,
        {
          status: error.status,
          ...(error.endpoint !== undefined ? { endpoint: error.endpoint } : {}),
          ...(error.body !== undefined ? { body: error.body } : {}),
          cause: error,
        },
      );
    }
    throw error;
  }
  return {
    bytes: response.bytes,
    utf8: response.utf8,
    body: () => {
      try {
        return response.parse();
      } catch (error) {
        if (error instanceof DataError && error.code === 'PAGE_MALFORMED') {
          throw new DataError('PAGE_MALFORMED', `report ${reportId}, ${what}: ${error.message}`, {
            cause: error,
          });
        }
        throw error;
      }
    },
  };
}

/** A report answer read: its status as sent, and the page it is when it is DONE (null otherwise). */
export interface ReportAnswer {
  readonly status: unknown;
  readonly page: ReportPage | null;
}

/**
 * Reads a downloaded report answer, in one pass from its bytes where it can be (page-decoder.ts) and else the full
 * way: parsed, checked (toReportPage) and mapped. It is a page when its status is DONE, or, unless
 * `statusRequired`, when it has no status as a string at all (a page read with a token need not repeat it).
 */
export async function readAnswer(
  fetched: FetchedReport,
  at: { readonly reportId: string; readonly index: number; readonly token: string | null },
  mapping: PostMapping,
  statusRequired: boolean,
  tapes?: BufferPool,
): Promise<ReportAnswer> {
  const { reportId, index, token } = at;
  const isPage = (status: unknown) => status === DONE || (!statusRequired && typeof status !== 'string');
  const decoded = await decodePage(fetched.utf8, { ...mapping, page: index }, tapes);
  if (decoded !== null && isPage(decoded.status)) {
    checkNext(decoded.nextPage, token, reportId, index);
    const reading: PageReading = {
      onePass: true,
      values: decoded.posts.values.length / VALUE_STRIDE,
      valuesTheFullWay: decoded.valuesTheFullWay,
    };
    const page = {
      index,
      token,
      nextPage: decoded.nextPage,
      posts: decoded.posts,
      bytes: fetched.bytes,
      reading,
    };
    return { status: decoded.status, page };
  }
  tapes?.give(decoded?.posts.values);
  const body = fetched.body();
  const status = isRecord(body) ? body.status : undefined;
  if (!isPage(status)) return { status, page: null };
  return { status, page: toReportPage(body, reportId, index, token, fetched.bytes, mapping) };
}

const DONE = 'DONE';

function checkNext(next: string | null, token: string | null, reportId: string, index: number): void {
  if (next !== null && next.length > MAX_PAGE_TOKEN_LENGTH) {
    throw new DataError(
      'PAGE_MALFORMED',
      `report ${reportId}, page ${index}: next_page is ${next.length} characters long, more than the ${MAX_PAGE_TOKEN_LENGTH} a page token may be: the answer is refused`,
    );
  }
  if (next !== null && next === token) {
    throw new DataError(
      'PAGE_MALFORMED',
      `report ${reportId}, page ${index}: next_page repeats the token of this page (${next})`,
    );
  }
}

/**
 * Checks the shape of a DONE report response and returns it as a page: `data` an array of at most 1,000
 * objects, `response_metadata[0].next_page` a string or null, its records mapped (record-mapping.ts).
 * DataError('PAGE_MALFORMED') names report and page.
 */
export function toReportPage(
  body: unknown,
  reportId: string,
  index: number,
  token: string | null,
  bytes: number,
  mapping: PostMapping,
): ReportPage {
  const fail = (why: string) => new DataError('PAGE_MALFORMED', `report ${reportId}, page ${index}: ${why}`);
  if (!isRecord(body)) throw fail(`the response is ${kind(body)}, not an object`);
  const data = body.data;
  if (!Array.isArray(data)) throw fail(`data is ${kind(data)}, not an array`);
  if (data.length > MAX_POSTS_PER_PAGE) {
    throw fail(`data holds ${data.length} posts, more than the ${MAX_POSTS_PER_PAGE} a page may hold`);
  }
  for (let i = 0; i < data.length; i += 1) {
    if (!isRecord(data[i])) throw fail(`data[${i}] is ${kind(data[i])}, not an object`);
  }
  const metadata = body.response_metadata;
  if (!Array.isArray(metadata) || !isRecord(metadata[0])) {
    throw fail(`response_metadata is ${kind(metadata)}, not an array holding an object`);
  }
  const next = metadata[0].next_page;
  if (next !== null && (typeof next !== 'string' || next === '')) {
    throw fail(`response_metadata[0].next_page is ${kind(next)}, not a page token or null`);
  }
  checkNext(next, token, reportId, index);
  const posts = mapRecords(data as Record<string, unknown>[], { ...mapping, page: index });
  const values = mappedValues(posts);
  return {
    index,
    token,
    nextPage: next,
    posts,
    bytes,
    reading: { onePass: false, values, valuesTheFullWay: values },
  };
}

/**
 * The pages of a DONE report, one at a time, following next_page until it is null; a token that comes back (a
 * cycle) fails with DataError('PAGE_MALFORMED') naming the report. The next page downloads
 * while the consumer handles the current one (one page ahead, never more); stopping early aborts that download.
 * A report or page token that is gone raises ApiError('REPORT_GONE'); a malformed page DataError('PAGE_MALFORMED').
 * A page's posts are read before the next page is asked for: its memory then holds a later page's (BufferPool).
 */
export async function* readPages(
  client: ApiClient,
  reportId: string,
  options: ReadPagesOptions,
): AsyncGenerator<ReportPage> {
  const stop = new AbortController();
  const signal = options.signal ? AbortSignal.any([options.signal, stop.signal]) : stop.signal;
  // One page is read while the next downloads: two bodies, one tape.
  const bodies = new BufferPool(2);
  const tapes = new BufferPool(1);
  /** The bytes each page read here was read from, to give back with it. */
  const bodyOf = new WeakMap<ReportPage, Buffer>();
  const download = async (token: string | null, index: number): Promise<() => Promise<ReportPage>> => {
    const what = `page ${index}`;
    const fetched = await fetchReport(client, reportId, what, { token, signal, bodies });
    return async () => {
      const answer = await readAnswer(fetched, { reportId, index, token }, options.mapping, false, tapes);
      if (answer.page === null) {
        throw new DataError(
          'PAGE_MALFORMED',
          `report ${reportId}, ${what}: status "${answer.status}", not DONE`,
        );
      }
      bodyOf.set(answer.page, fetched.utf8);
      return answer.page;
    };
  };
  const done = (page: ReportPage) => {
    if (page.posts instanceof PageTape) {
      page.posts.retire();
      tapes.give(page.posts.values);
    }
    bodies.give(bodyOf.get(page));
  };
  let pending: Promise<() => Promise<ReportPage>> | null = null;
  // Every token of the report read so far, with the page it fetched: next_page may lead back to any of them, and a
  // cycle would be followed until the disk is full.
  const seen = new Map<string, number>();
  try {
    let current: ReportPage;
    if (options.first) current = options.first;
    else if (options.startToken !== undefined) {
      current = await (await download(options.startToken, (options.startIndex ?? 0) + 1))();
    } else current = await (await download(null, 1))();
    for (;;) {
      if (current.token !== null) seen.set(current.token, current.index);
      const next = current.nextPage;
      if (next !== null) {
        const before = seen.get(next);
        if (before !== undefined) {
          throw new DataError(
            'PAGE_MALFORMED',
            `report ${reportId}, page ${current.index}: next_page ${JSON.stringify(next)} leads back to page ${before}: the report's pages form a cycle`,
          );
        }
        const most = options.maxPages ?? DEFAULT_MAX_REPORT_PAGES;
        if (current.index >= most) {
          throw new DataError(
            'PAGE_MALFORMED',
            `report ${reportId} goes on past page ${current.index}, more than the ${most} pages a report may have (${SETTINGS.maxReportPages.env}): raise it if the report is that large`,
          );
        }
        // Downloaded now, parsed when taken. Parsed on arrival, a page's objects lived through the handling of
        // the page before, V8 promoted them to its old generation, and full collections came more often (97
        // instead of 72-76 for 200,000 posts, node --trace-gc).
        pending = download(next, current.index + 1);
        // Handled when awaited below; until then a failure must not count as unhandled.
        pending.catch(() => {});
      }
      yield current;
      done(current);
      if (pending === null) return;
      current = await (await pending)();
      pending = null;
    }
  } catch (error) {
    if (options.signal?.aborted && !(error instanceof EtlError)) {
      throw new ApiError('ABORTED', `reading report ${reportId} was aborted`, { cause: error });
    }
    throw error;
  } finally {
    // The consumer stopped early, or a page failed: the prefetch in flight is no longer wanted.
    stop.abort(new Error('the pages are no longer read'));
  }
}

/** A report id as text, whatever JSON type the service chose for it. */
export function reportIdText(value: unknown): string | undefined {
  if (typeof value === 'string' && value !== '' && value.length <= MAX_REPORT_ID_LENGTH) return value;
  if (typeof value === 'number' && Number.isSafeInteger(value)) return String(value);
  if (value instanceof ExactNumber && value.isInteger) return value.text;
  return undefined;
}
