/*
 * One attempt on a window, the one owner of its state changes and of the data-age rule: it starts, records the
 * report it receives (with the report's age), notes a report that failed or vanished, and ends failed or
 * interrupted (endWindowAttempt); the loader records its pages staged, and its commit ends it loaded
 * (commit.ts, with markLoaded). window-state.ts is the storage.
 *
 * The data-age rule: a report is taken as made when the window first received its id, less the API's reuse
 * period (another identical request may have created it that much earlier). Nothing older replaces anything
 * newer: a report older than rows loaded since for its dates is neither resumed nor used, one first received
 * longer ago than the reuse period is not resumed (an identical request would get a newer one), and one the
 * window saw fail is not polled again, since the API hands it back until its reuse period ends. One it saw vanish
 * (a 404) is asked once for its first page: a page token that expired is answered 404 too.
 */
import type pg from 'pg';
import { reportEnd } from '../error-policy.js';
import { ApiError } from '../errors.js';
import type { Clock } from '../model/clock.js';
import type { Filters } from '../model/filters.js';
import { type Window, windowLabel } from '../model/window.js';
import type { Scope } from './scope.js';
import {
  endAttempt,
  type KnownReport,
  newerLoads,
  readWindow,
  receiveReport,
  recordReport,
  recordReportOutcome,
  startAttempt,
} from './window-state.js';

export interface AttemptContext {
  readonly pool: pg.Pool;
  readonly scope: Scope;
  readonly clock: Clock;
  /** The API's reuse period (POST_REPORTS_REPORT_REUSE_MS). */
  readonly reportReuseMs: number;
}

/** The report of an attempt in progress, as the window recorded it. */
interface InProgress {
  readonly reportId: string;
  readonly madeAt: Date | null;
  readonly receivedAt: Date | null;
}

export class WindowAttempt {
  readonly #context: AttemptContext;
  readonly window: Window;
  /** The report of the attempt in progress this one continues, if any. */
  #inProgress: InProgress | null;
  /** The report being polled or read. */
  #report: string | null = null;

  private constructor(context: AttemptContext, window: Window, inProgress: InProgress | null) {
    this.#context = context;
    this.window = window;
    this.#inProgress = inProgress;
  }

  /** Starts an attempt: counts it, and keeps the report of the attempt in progress, if any. */
  static async start(context: AttemptContext, window: Window, filters: Filters): Promise<WindowAttempt> {
    const previous = await readWindow(context.pool, context.scope, window);
    await startAttempt(context.pool, context.scope, window, filters);
    const reportId = previous?.attemptReportId ?? null;
    return new WindowAttempt(
      context,
      window,
      reportId === null
        ? null
        : {
            reportId,
            madeAt: previous?.attemptReportMadeAt ?? null,
            receivedAt: previous?.attemptReportReceivedAt ?? null,
          },
    );
  }

  /**
   * The report to resume: the attempt in progress's, while an identical request would still be answered with it
   * (within the API's reuse period of its first receipt: later, a new report holds newer figures) and no rows
   * loaded since for its dates are newer. Otherwise it is dropped, and `onDropped` told why. Null: ask the API
   * for a report.
   */
  async resumable(onDropped: (reportId: string, why: string) => void): Promise<string | null> {
    const inProgress = this.#inProgress;
    if (inProgress === null) return null;
    const { pool, scope } = this.#context;
    const why = await this.#tooOld(inProgress);
    if (why !== null) {
      onDropped(inProgress.reportId, why);
      await recordReport(pool, scope, this.window, null);
      this.#inProgress = null;
      return null;
    }
    this.#report = inProgress.reportId;
    return inProgress.reportId;
  }

  /** Why the report in progress must not be resumed, or null. */
  async #tooOld(inProgress: InProgress): Promise<string | null> {
    const { pool, scope, clock, reportReuseMs } = this.#context;
    const { receivedAt } = inProgress;
    if (receivedAt !== null && clock.now().getTime() - receivedAt.getTime() >= reportReuseMs) {
      return "the report in progress was first received longer ago than the API's reuse period: a new one holds newer figures";
    }
    const newer = await newerLoads(pool, scope, this.window, inProgress.madeAt);
    if (newer.length === 0) return null;
    return `the report in progress is older than the rows loaded since for ${newer.map(windowLabel).join(', ')}`;
  }

  /**
   * Records the report the API answered a creation with, and its age (from the window's first receipt of it).
   * Throws, final for the run, for a report that cannot serve: one the window saw fail, or one older than rows
   * loaded since for its dates. One the window saw vanish (outcome 'gone') is returned: a 404 on a page says only
   * that its token or the report is gone, and the report's first page tells which (answered, or goneFor).
   */
  async received(reportId: string): Promise<KnownReport> {
    const { pool, scope, clock, reportReuseMs } = this.#context;
    const report = await receiveReport(pool, scope, this.window, reportId, clock.now(), reportReuseMs);
    if (report.outcome === 'failed') throw handedBack(report, 'REPORT_FAILED', 'failed', reportReuseMs);
    const newer = await newerLoads(pool, scope, this.window, report.madeAt);
    if (newer.length > 0) {
      throw new ApiError(
        'REPORT_STALE',
        `the API returns report ${report.reportId}, older than the rows loaded for ${newer.map(windowLabel).join(', ')}, until about ${until(report, reportReuseMs)}: a run after that asks for a new one`,
        { final: true },
      );
    }
    this.#report = report.reportId;
    await recordReport(pool, scope, this.window, report);
    return report;
  }

  /** A report the window saw vanish answered its first page: a page token had expired, the report lives. */
  async answered(report: KnownReport): Promise<void> {
    const { pool, scope } = this.#context;
    await recordReportOutcome(pool, scope, this.window, report.reportId, 'received');
  }

  /** The error, final for the run, of a report the window saw vanish whose first page is gone too. */
  goneFor(report: KnownReport, cause: unknown): ApiError {
    return handedBack(report, 'REPORT_GONE', 'vanished', this.#context.reportReuseMs, cause);
  }

  /**
   * What an error of the attempt means for its report: one that failed is never polled again, one that is gone
   * only for its first page (the next attempt asks for a new one, and should the API hand this one back, it is
   * recognised). One that served a
   * malformed page, or whose page token expired (410), is not resumed: the next attempt asks again, and handed
   * back, it is read afresh from its first page.
   */
  async reportEnded(error: unknown): Promise<void> {
    const outcome = reportEnd(error);
    if (outcome === null) return;
    const { pool, scope } = this.#context;
    const current = this.#report;
    if (current !== null && outcome !== 'dropped') {
      await recordReportOutcome(pool, scope, this.window, current, outcome);
    }
    await recordReport(pool, scope, this.window, null);
  }
}

/** Until when (about) the API hands the report back to an identical request, in UTC. */
function until(report: KnownReport, reuseMs: number): string {
  const at = new Date(report.receivedAt.getTime() + reuseMs);
  return `${at.toISOString().slice(0, 16).replace('T', ' ')} UTC`;
}

function handedBack(
  report: KnownReport,
  code: 'REPORT_FAILED' | 'REPORT_GONE',
  what: string,
  reuseMs: number,
  cause?: unknown,
): ApiError {
  return new ApiError(
    code,
    `the API returns the same ${what} report ${report.reportId} for this window until about ${until(report, reuseMs)}: a run after that asks for a new one`,
    { final: true, ...(cause === undefined ? {} : { cause }) },
  );
}

/**
 * Ends the latest attempt on a window that did not load: 'failed' (its report is dropped, and the next run asks
 * for a new one) or 'pending' when interrupted (its report is kept, for the next run to resume). A window's
 * group may end it after its own attempt staged, so it goes by window.
 */
export function endWindowAttempt(
  context: Pick<AttemptContext, 'pool' | 'scope'>,
  window: Window,
  outcome: 'failed' | 'pending',
  message: string,
): Promise<void> {
  return endAttempt(context.pool, context.scope, window, outcome, message);
}
