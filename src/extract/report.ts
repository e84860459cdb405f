import { setTimeout as sleep } from 'node:timers/promises';
import type { ApiClient } from '../api/client.js';
import { pollDelayMs } from '../api/retry-policy.js';
import { type ApiConfig, SETTINGS } from '../config.js';
import { ApiError, DataError } from '../errors.js';
import { type Filters, filtersToRequest } from '../model/filters.js';
import { isRecord, kind } from './json-shape.js';
import {
  fetchReport,
  MAX_REPORT_ID_LENGTH,
  type PostMapping,
  type ReportPage,
  readAnswer,
  reportIdText,
} from './pager.js';
import type { ReportReadiness } from './report-readiness.js';

/** The report creation answer: its id (stored so that a restart resumes polling) and first status. */
export interface CreatedReport {
  id: string;
  status: string;
}

const REPORTS_PATH = 'reports/posts';

/**
 * Statuses that mean the report will never be DONE. The service documents only IN_PROGRESS and DONE; these are
 * the words services of this kind use, matched as whole words of the status (IN_PROGRESS never matches).
 */
const FAILURE_STATUS =
  /(^|_)(FAIL|FAILED|FAILURE|ERROR|ERRORED|CANCELLED|CANCELED|FATAL|EXPIRED|ABORTED|REJECTED|TIMEOUT|TIMED_OUT|DELETED)(_|$)/;

/** True for a report status that means failure rather than "not ready yet". */
export function isFailureStatus(status: string): boolean {
  return FAILURE_STATUS.test(status.toUpperCase().replace(/[^A-Z]+/g, '_'));
}

/** Creates a post report for one date window (both dates inclusive) with the given filters. */
export async function createReport(
  client: ApiClient,
  window: { start: string; end: string },
  filters: Filters,
  signal?: AbortSignal,
): Promise<CreatedReport> {
  const body = { start_date: window.start, end_date: window.end, ...filtersToRequest(filters) };
  let answer: unknown;
  try {
    answer = await client.postJson(REPORTS_PATH, body, signal ? { signal } : {});
  } catch (error) {
    throw error instanceof ApiError && error.status === 400 ? refused(window, error) : error;
  }
  const fields = typeof answer === 'object' && answer !== null ? (answer as Record<string, unknown>) : {};
  const id = reportIdText(fields.id);
  if (id === undefined) {
    const long = typeof fields.id === 'string' && fields.id.length > MAX_REPORT_ID_LENGTH;
    throw new DataError(
      'PAGE_MALFORMED',
      long
        ? `POST /${REPORTS_PATH} for ${window.start}..${window.end}: the report id is ${(fields.id as string).length} characters long, more than the ${MAX_REPORT_ID_LENGTH} a report id may be: the answer is refused`
        : `POST /${REPORTS_PATH} for ${window.start}..${window.end}: the answer has no report id (id is ${kind(fields.id)})`,
    );
  }
  return { id, status: typeof fields.status === 'string' ? fields.status : 'UNKNOWN' };
}

/**
 * A 400 on creation is the API refusing this window's request (the spec's case: a segment filter the organization
 * no longer has): the window fails with the API's own message, which says what to change.
 */
function refused(window: { start: string; end: string }, error: ApiError): ApiError {
  return new ApiError(
    'REPORT_REJECTED',
    `${answered(error)}: the API refused the report for ${window.start}..${window.end}: ${apiMessage(error.body)}`,
    {
      status: 400,
      ...(error.endpoint === undefined ? {} : { endpoint: error.endpoint }),
      ...(error.body === undefined ? {} : { body: error.body }),
      cause: error,
    },
  );
}

/** "POST /reports/posts answered 400 (attempt 1)", as the client's message begins. */
function answered(error: ApiError): string {
  return (
    /^\S+ \S+ answered \d+ \(attempt \d+\)/.exec(error.message)?.[0] ?? `POST /${REPORTS_PATH} answered 400`
  );
}

/**
 * The message of an error body: `error.message` or `message` when the body is JSON with one (or a list whose first
 * entry has one: the spec does not show the body's shape), else the body.
 */
export function apiMessage(body: string | undefined): string {
  if (body === undefined || body === '') return '(empty body)';
  try {
    const parsed: unknown = JSON.parse(body);
    const first: unknown = Array.isArray(parsed) ? parsed[0] : parsed;
    if (isRecord(first)) {
      const inner = isRecord(first.error) ? first.error.message : first.message;
      if (typeof inner === 'string' && inner !== '') return inner;
    }
  } catch {
    // Not JSON: the body as it came (already one line and scrubbed by the client).
  }
  return body;
}

export interface WaitOptions {
  signal?: AbortSignal;
  /** Called after every poll that found the report not ready. */
  onPoll?: (status: string, elapsedMs: number) => void;
  /**
   * For a report this run has just created: the run's readiness record and the moment of the creation's answer
   * (performance.now()). Polls aim at the time the run's recent reports got DONE, and this one's is recorded.
   */
  readiness?: { readonly record: ReportReadiness; readonly createdAt: number };
}

/**
 * Polls GET /reports/posts/{id} until its status is DONE, every 10 % of the time waited so far (within poll.initialMs
 * and poll.maxMs, and aimed at when the run's recent reports got DONE: options.readiness), and returns the DONE
 * answer as the report's first page (so that page 1 is not downloaded twice).
 * A failure status → ApiError('REPORT_FAILED'); not DONE by poll.deadlineMs → ApiError('REPORT_DEADLINE');
 * 400/404/410 → ApiError('REPORT_GONE').
 */
export async function waitForReport(
  client: ApiClient,
  reportId: string,
  poll: ApiConfig['poll'],
  mapping: PostMapping,
  options: WaitOptions = {},
): Promise<ReportPage> {
  const { signal, readiness } = options;
  const started = performance.now();
  let polls = 0;
  for (;;) {
    polls += 1;
    const sentAt = performance.now();
    // The status poll is the request for page 1: once the report is DONE, its answer is that page.
    const fetched = await fetchReport(client, reportId, 'page 1 (the status poll)', signal ? { signal } : {});
    const { status, page } = await readAnswer(fetched, { reportId, index: 1, token: null }, mapping, true);
    if (typeof status !== 'string') {
      throw new DataError(
        'PAGE_MALFORMED',
        `report ${reportId}: the status is ${kind(status)}, not a string`,
      );
    }
    if (page !== null) {
      // DONE at the first poll says nothing of how long reports take.
      if (readiness !== undefined && polls > 1) readiness.record.observe(sentAt - readiness.createdAt);
      return page;
    }
    if (isFailureStatus(status)) {
      throw new ApiError('REPORT_FAILED', `report ${reportId} ended with status ${status}`);
    }
    const elapsed = performance.now() - started;
    options.onPoll?.(status, elapsed);
    const remaining = poll.deadlineMs - elapsed;
    if (remaining <= 0) {
      throw new ApiError(
        'REPORT_DEADLINE',
        `report ${reportId} was not DONE after ${seconds(elapsed)} (${polls} polls, deadline ${seconds(poll.deadlineMs)}, ${SETTINGS.pollDeadlineMs.env}); last status ${status}`,
      );
    }
    // The last wait ends at the deadline for a final poll.
    const sinceCreated = readiness === undefined ? 0 : performance.now() - readiness.createdAt;
    const aim = readiness?.record.nextAimMs(sinceCreated);
    const aimIn = aim === undefined ? undefined : aim - sinceCreated;
    const wait = Math.min(remaining, pollDelayMs(elapsed, poll, aimIn));
    try {
      await sleep(wait, undefined, signal ? { signal } : undefined);
    } catch (error) {
      throw new ApiError('ABORTED', `waiting for report ${reportId} was aborted (last status ${status})`, {
        cause: error,
      });
    }
  }
}

function seconds(ms: number): string {
  return ms < 10_000 ? `${Math.round(ms)} ms` : `${Math.round(ms / 1000)} s`;
}
