import { ERROR_BODY_SHAPES, type ErrorBodyShape } from './http-io.js';
import { checkPageFaults, NO_PAGE_FAULTS, type PageFaults } from './page-faults.js';
import type { Random } from './random.js';

/** Corruptions of a page around its records. */
export const ENVELOPE_KINDS = [
  'data-not-array',
  'too-many-records',
  'missing-response-metadata',
  'next-page-not-string',
  'truncated-json',
  'html-200',
] as const;

export const CORRUPTION_KINDS = [
  ...ENVELOPE_KINDS,
  'record-without-id',
  'non-integer-id',
  'duplicate-id',
  'wrong-type',
  'nul-characters',
  'huge-string',
  'not-a-date',
] as const;

/**
 * How a corrupted page of GET /reports/posts/{id} (status DONE) is malformed: the page itself (ENVELOPE_KINDS),
 * or records of an otherwise well-formed page (the rest; page-body.ts corruptPageBody says how for each).
 */
export type CorruptionKind = (typeof CORRUPTION_KINDS)[number];

/**
 * Fault knobs; all off by default but the expiry of reports and page tokens. Shares are probabilities drawn from
 * the seeded generator.
 */
export interface Faults extends PageFaults {
  /** Added before every response. */
  latencyMs: number;
  /** Share of requests answered 429 with Retry-After. */
  rateLimitShare: number;
  /** Retry-After value sent with 429 (0 allowed). */
  retryAfterSeconds: number;
  /** Share answered 500, 502 or 503 (JSON body). */
  serverErrorShare: number;
  /** Share whose socket is destroyed without any response. */
  dropShare: number;
  /** Share of newly created reports that end FAILED instead of DONE. */
  failReportShare: number;
  /** Reports whose start_date is listed end FAILED. */
  failReportStartDates: string[];
  /**
   * A next_page token older than this answers 410 (null: never expires). Default 1 h on the simulator's clock: a
   * service does not keep a reading's place for ever.
   */
  pageTokenTtlMs: number | null;
  /**
   * The status of a page token the report cannot serve (expired, unknown, or pageTokenExpiresAtPage), as the v4
   * spec leaves the answer to an invalid page value open: 400 invalid_request, or 404 page_not_found (what a
   * report that is gone answers too); null: 410 for an expired token, 404 for an unknown one.
   */
  pageTokenErrorStatus: 400 | 404 | null;
  /**
   * The shape of every error body the API sends (see ERROR_BODY_SHAPES); null (the default): each error's drawn
   * from the service's shapes (ServiceShapes.errorBodyShapes).
   */
  errorBodyShape: ErrorBodyShape | null;
  /** A report older than this answers 404 on every GET (null: never). Default 12 h on the simulator's clock. */
  reportTtlMs: number | null;
  /** Malformed report pages (status DONE). */
  corruptPages: { kind: CorruptionKind; share: number } | null;
  /**
   * GET /reports/posts/{id} answers this status word (and no data) for every report that exists, whatever
   * its real state: a status the v4 spec does not define, such as "ARCHIVED" (null: the real status).
   */
  reportStatusOverride: string | null;
}

export const DEFAULT_FAULTS: Readonly<Faults> = Object.freeze({
  latencyMs: 0,
  rateLimitShare: 0,
  retryAfterSeconds: 1,
  serverErrorShare: 0,
  dropShare: 0,
  failReportShare: 0,
  failReportStartDates: [],
  pageTokenTtlMs: 3_600_000,
  pageTokenErrorStatus: null,
  errorBodyShape: null,
  reportTtlMs: 12 * 3_600_000,
  corruptPages: null,
  reportStatusOverride: null,
  ...NO_PAGE_FAULTS,
});

function share(name: string, value: number): void {
  if (!(value >= 0 && value <= 1))
    throw new RangeError(`fault ${name} must be a share from 0 to 1, got ${value}`);
}

function duration(name: string, value: number | null): void {
  if (value !== null && !(value >= 0 && Number.isFinite(value))) {
    throw new RangeError(`fault ${name} must be a non-negative number of milliseconds, got ${value}`);
  }
}

/** Merges changes into the current knobs, refusing impossible values. */
export function mergeFaults(current: Readonly<Faults>, changes: Partial<Faults>): Faults {
  const merged: Faults = { ...current };
  for (const [key, value] of Object.entries(changes)) {
    if (value !== undefined) Object.assign(merged, { [key]: value });
  }
  for (const fault of REQUEST_FAULTS) share(fault.share, merged[fault.share]);
  share('failReportShare', merged.failReportShare);
  duration('latencyMs', merged.latencyMs);
  duration('retryAfterSeconds', merged.retryAfterSeconds);
  duration('pageTokenTtlMs', merged.pageTokenTtlMs);
  duration('reportTtlMs', merged.reportTtlMs);
  if (merged.corruptPages !== null) {
    if (!CORRUPTION_KINDS.includes(merged.corruptPages.kind)) {
      throw new RangeError(`unknown corruption kind ${JSON.stringify(merged.corruptPages.kind)}`);
    }
    share('corruptPages.share', merged.corruptPages.share);
  }
  if (
    merged.pageTokenErrorStatus !== null &&
    merged.pageTokenErrorStatus !== 400 &&
    merged.pageTokenErrorStatus !== 404
  ) {
    throw new RangeError(
      `fault pageTokenErrorStatus must be 400, 404 or null, got ${merged.pageTokenErrorStatus}`,
    );
  }
  if (merged.errorBodyShape !== null && !ERROR_BODY_SHAPES.includes(merged.errorBodyShape)) {
    throw new RangeError(
      `fault errorBodyShape must be one of ${ERROR_BODY_SHAPES.join(', ')}, got ${JSON.stringify(merged.errorBodyShape)}`,
    );
  }
  const status = merged.reportStatusOverride;
  if (status !== null && !(typeof status === 'string' && /^[\x21-\x7e]+$/.test(status))) {
    throw new RangeError(
      `fault reportStatusOverride must be a status word (printable ASCII) or null, got ${JSON.stringify(status)}`,
    );
  }
  checkPageFaults(merged);
  merged.failReportStartDates = [...merged.failReportStartDates];
  return merged;
}

/**
 * The faults that answer a request instead of the API, each with its share of requests (a knob of Faults) and
 * its flag of the simulator command. A new one is an entry here and its answer in server.ts.
 */
export const REQUEST_FAULTS = [
  { fault: 'drop', share: 'dropShare', flag: 'drop-share', description: 'share of connections dropped' },
  {
    fault: 'rate-limit',
    share: 'rateLimitShare',
    flag: 'rate-limit-share',
    description: 'share of requests answered 429',
  },
  {
    fault: 'server-error',
    share: 'serverErrorShare',
    flag: 'server-error-share',
    description: 'share of requests answered 5xx',
  },
] as const satisfies readonly { fault: string; share: keyof Faults; flag: string; description: string }[];

export type RequestFault = (typeof REQUEST_FAULTS)[number]['fault'];

/** One draw per request decides its fault, so that the shares never overlap. */
export function drawRequestFault(random: Random, faults: Readonly<Faults>): RequestFault | null {
  const draw = random.next();
  let bound = 0;
  for (const { fault, share } of REQUEST_FAULTS) {
    bound += faults[share];
    if (draw < bound) return fault;
  }
  return null;
}
