import { setTimeout as sleep } from 'node:timers/promises';
import { backoffMs, isConnectionLoss, RETRY_WAITS, retriesWindow } from '../error-policy.js';
import { ApiError, EtlError, oneLine } from '../errors.js';
import { type PostMapping, type ReportPage, readPages } from '../extract/pager.js';
import { createReport, waitForReport } from '../extract/report.js';
import { ReportReadiness } from '../extract/report-readiness.js';
import { waitForDatabase } from '../load/database-retry.js';
import type { Registry } from '../load/schema-evolution.js';
import type { StageShape } from '../load/staging.js';
import { CopyPools } from '../load/tape-encoding.js';
import { type AttemptContext, endWindowAttempt, WindowAttempt } from '../load/window-attempt.js';
import type { KnownReport } from '../load/window-state.js';
import type { Logger } from '../logger.js';
import { ALL_FIELDS, fieldFilter } from '../model/field-selection.js';
import { type Window, windowLabel } from '../model/window.js';
import { type ActiveRun, runScope } from './run-context.js';
import type { WindowFailure } from './run-summary.js';
import { Watchdog } from './watchdog.js';
import type { WindowGroup } from './windows.js';

/** What an attempt fetched and staged itself (pages staged by an earlier run it resumes are not counted). */
interface Staged {
  posts: number;
  pages: number;
}

/**
 * Stages the run's windows: each window's attempts (WindowAttempt), each creating (or resuming) a report and
 * streaming its pages into the stage. The commit of its group is WindowCommit's (load/window-commit.ts).
 */
export class WindowStager {
  readonly #run: ActiveRun;
  /** The windows whose first attempt began: a stopped run leaves the others as they were, not interrupted. */
  readonly #started = new Set<string>();
  readonly #attempts: AttemptContext;
  /** How long the run's new reports took to get DONE: the polls of the next ones aim there. */
  readonly #readiness = new ReportReadiness();

  constructor(run: ActiveRun) {
    this.#run = run;
    this.#attempts = {
      pool: run.pool,
      scope: runScope(run.config),
      clock: run.clock,
      reportReuseMs: run.config.api.reportReuseMs,
    };
  }

  /** Stages the window, retrying failed attempts; throws the last attempt's error. */
  async stage(window: Window): Promise<void> {
    const { config, stop, onProgress } = this.#run;
    const signal = stop.child();
    const log = this.#run.logger.child({ window: windowLabel(window) });
    for (let attempt = 1; ; attempt += 1) {
      if (signal.aborted) throw new EtlError('ABORTED', 'the run was interrupted before this window started');
      this.#started.add(windowLabel(window));
      const started = Date.now();
      onProgress?.({ type: 'window-started', window, attempt });
      log.info({ attempt }, 'window started');
      try {
        const { posts, pages } = await this.#attempt(window, signal, log);
        log.info({ attempt, posts, pages, stageMs: Date.now() - started }, 'window staged');
        return;
      } catch (error) {
        // A rejected token stops every window now; this one too is interrupted, not failed.
        stop.check(error);
        const failure = windowFailure(window, error);
        if (signal.aborted) {
          log.warn({ attempt }, 'window interrupted');
          await this.markInterrupted(window, signal.reason);
          throw error;
        }
        if (attempt >= config.run.windowAttempts || !retriesWindow(error)) {
          log.error({ attempt, code: failure.code, err: error }, 'window failed');
          await this.markFailed(window, failure.message);
          onProgress?.({ type: 'window-failed', window, error: failure.message });
          throw error;
        }
        log.warn({ attempt, code: failure.code, error: failure.message }, 'window attempt failed; retrying');
        // A database that went away (failover, restart) is given its time to come back before the next attempt.
        if (isConnectionLoss(error))
          await waitForDatabase(this.#run.pool, config.db.reconnectWaitMs ?? 0, signal);
        await sleep(backoffMs(attempt, RETRY_WAITS.window.firstMs, RETRY_WAITS.window.maxMs), undefined, {
          signal,
        }).catch(() => {});
      }
    }
  }

  /** Whether this run began staging `window` (an attempt of it is recorded). */
  wasStarted(window: Window): boolean {
    return this.#started.has(windowLabel(window));
  }

  async markInterrupted(window: Window, reason: unknown): Promise<void> {
    const message = reason instanceof Error ? reason.message : 'interrupted';
    try {
      await endWindowAttempt(this.#attempts, window, 'pending', oneLine(message));
    } catch (error) {
      this.#run.logger.error(
        { err: error, window: windowLabel(window) },
        'could not record the interruption',
      );
    }
  }

  async markFailed(window: Window, message: string): Promise<void> {
    try {
      await endWindowAttempt(this.#attempts, window, 'failed', message);
    } catch (error) {
      this.#run.logger.error({ err: error, window: windowLabel(window) }, 'could not record the failure');
    }
  }

  /** Counts and reports a committed group. */
  committed(group: WindowGroup, rows: number, durationMs: number): void {
    this.#run.counters.committed(group.length, rows);
    for (const w of group) {
      this.#run.onProgress?.({ type: 'window-loaded', window: w, posts: rows, durationMs });
    }
    this.#run.logger.info(
      { windows: group.map(windowLabel), rows, commitMs: durationMs },
      'windows committed',
    );
  }

  async #attempt(window: Window, windowSignal: AbortSignal, log: Logger): Promise<Staged> {
    const { api, loader, filters, config } = this.#run;
    const attempt = await WindowAttempt.start(this.#attempts, window, filters);
    const watchdog = new Watchdog(config.run.stallTimeoutMs, windowSignal);
    try {
      // Only the attempt in progress (interrupted, killed, or retried within this run) has a report to resume,
      // and only while the API would hand it back and no rows loaded for its dates since are newer. A new load or
      // reload always asks the API for a report: an earlier one may hold figures since restated.
      const inProgress = await attempt.resumable((reportId, why) =>
        log.info({ reportId }, `${why}; asking for a new one`),
      );
      if (inProgress !== null) return await this.#resume(window, inProgress, watchdog, log);
      watchdog.waitingFor('the report to be created');
      const created = await createReport(api, window, filters, watchdog.signal);
      const createdAt = performance.now();
      this.#run.counters.reportCreated();
      const report = await attempt.received(created.id);
      log.info({ reportId: report.reportId, madeAt: report.madeAt, reused: !report.first }, 'report created');
      const mapping = this.#mapping(window);
      const answered =
        report.outcome === 'gone'
          ? await this.#stillThere(attempt, report, mapping, watchdog, log)
          : undefined;
      // The stage is made while the report is generated, not after it is DONE; read from its first page, a report
      // handed back keeps nothing of an earlier reading.
      await loader.openWindow(window, report.reportId, watchdog.signal, { fromFirstPage: true });
      const first =
        answered ??
        (await this.#waitFor(report.reportId, mapping, watchdog, report.first ? createdAt : undefined));
      const pages = readPages(api, report.reportId, {
        mapping,
        first,
        signal: watchdog.signal,
        maxPages: config.api.maxReportPages,
      });
      return await this.#stagePages(window, report.reportId, pages, watchdog, log);
    } catch (error) {
      await attempt.reportEnded(error);
      throw watchdog.reason(error);
    } finally {
      watchdog.stop();
    }
  }

  /**
   * Continues the attempt in progress with its report. One that is gone fails the attempt: the API hands it back
   * to an identical request within its reuse period, so the next attempt, after the retry's wait, asks again.
   */
  async #resume(window: Window, reportId: string, watchdog: Watchdog, log: Logger): Promise<Staged> {
    const { api, loader } = this.#run;
    const signal = watchdog.signal;
    const mapping = this.#mapping(window);
    const progress = await loader.openWindow(window, reportId, signal);
    if (progress.pagesStaged > 0) {
      log.info({ reportId, pagesStaged: progress.pagesStaged }, 'resuming a staged window');
      // Every page was staged before: nothing is fetched now, and a run counts only what it fetched.
      if (progress.nextPage === null) return { posts: 0, pages: 0 };
      const rest = readPages(api, reportId, {
        mapping,
        startToken: progress.nextPage,
        startIndex: progress.pagesStaged,
        signal,
        maxPages: this.#run.config.api.maxReportPages,
      });
      return await this.#stagePages(window, reportId, rest, watchdog, log);
    }
    const first = await this.#waitFor(reportId, mapping, watchdog);
    const pages = readPages(api, reportId, {
      mapping,
      first,
      signal,
      maxPages: this.#run.config.api.maxReportPages,
    });
    return await this.#stagePages(window, reportId, pages, watchdog, log);
  }

  /**
   * A report handed back that the window saw vanish: a 404 on a page says only that its token or the report is
   * gone. Its first page tells which: it answers (a token expired), and it is read again from the start; it is
   * gone too, and the attempt ends final, as the API hands it back until its reuse period ends.
   */
  async #stillThere(
    attempt: WindowAttempt,
    report: KnownReport,
    mapping: PostMapping,
    watchdog: Watchdog,
    log: Logger,
  ): Promise<ReportPage> {
    let first: ReportPage;
    try {
      first = await this.#waitFor(report.reportId, mapping, watchdog);
    } catch (error) {
      if (error instanceof ApiError && error.code === 'REPORT_GONE') throw attempt.goneFor(report, error);
      throw error;
    }
    await attempt.answered(report);
    log.info(
      { reportId: report.reportId },
      'the report thought gone answers: a page token had expired; reading it again from its first page',
    );
    return first;
  }

  /** How the window's records become posts: the id field, the window and the run's field selection. */
  #mapping(window: Window): PostMapping {
    const { config } = this.#run;
    return {
      postIdField: config.api.postIdField,
      window,
      keep: fieldFilter(config.run.fields ?? ALL_FIELDS),
    };
  }

  /** `createdAt`: when this run created the report (performance.now()); undefined for one made before. */
  #waitFor(
    reportId: string,
    mapping: PostMapping,
    watchdog: Watchdog,
    createdAt?: number,
  ): Promise<ReportPage> {
    watchdog.waitingFor(`report ${reportId} to be DONE`);
    return waitForReport(this.#run.api, reportId, this.#run.config.api.poll, mapping, {
      signal: watchdog.signal,
      onPoll: () => watchdog.progress(),
      ...(createdAt === undefined ? {} : { readiness: { record: this.#readiness, createdAt } }),
    });
  }

  async #stagePages(
    window: Window,
    reportId: string,
    pages: AsyncGenerator<ReportPage>,
    watchdog: Watchdog,
    log: Logger,
  ): Promise<Staged> {
    const { loader, counters, onProgress } = this.#run;
    const staged: Staged = { posts: 0, pages: 0 };
    watchdog.waitingFor(`a page of report ${reportId}`);
    // A page is encoded while the one before it is written: on two cores the encoding overlaps the database.
    let writing: Promise<void> | undefined;
    // Each page is planned against the columns of posts the one before saw (Loader.preparePage).
    let registry: Registry | undefined;
    // And written into the stage as the one before left it (Loader.writePage).
    let stage: StageShape | undefined;
    const pools = new CopyPools();
    try {
      for await (const page of pages) {
        counters.pageRead(page.reading);
        const mapped = page.posts;
        // The pager counts pages from 1, as messages do; the stage counts from 0.
        const prepared = await loader.preparePage(
          window,
          { index: page.index - 1, nextPage: page.nextPage, posts: mapped, reportId },
          watchdog.signal,
          registry,
          pools,
        );
        registry = prepared.registry;
        watchdog.waitingFor(`the database to stage page ${page.index} of report ${reportId}`);
        await writing;
        // Only numbers and the registry outlive this iteration: the page's records and rows are garbage once
        // encoded, while the write runs (they are most of the live heap).
        const rows = mapped.length;
        const index = page.index;
        const bytes = page.bytes;
        writing = loader.writePage(prepared, watchdog.signal, stage).then((written) => {
          stage = written;
          // Written: the next page but one encodes into its memory. A failed write keeps it (its socket may still
          // be sending it).
          pools.give(prepared);
          watchdog.progress();
          staged.posts += rows;
          staged.pages += 1;
          counters.pageStaged();
          onProgress?.({ type: 'page-staged', window, posts: rows });
          log.debug({ page: index, posts: rows, bytes }, 'page staged');
        });
        // Awaited on the next page or below; this only keeps a failure from being reported as unhandled meanwhile.
        writing.catch(() => {});
        watchdog.waitingFor(`a page of report ${reportId}`);
      }
      await writing;
    } finally {
      // Never leave a write running behind a failed attempt: the next attempt would race it.
      await writing?.catch(() => {});
    }
    return staged;
  }
}

/** A window's failure as the summary reports it. */
export function windowFailure(window: Window, error: unknown): WindowFailure {
  const code = error instanceof EtlError ? error.code : 'UNEXPECTED';
  const message = error instanceof Error ? oneLine(error.message) : oneLine(String(error));
  return { start: window.start, end: window.end, code, message };
}
