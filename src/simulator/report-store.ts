import type { PostRefs } from './post-catalog.js';
import type { Random } from './random.js';

export type ReportStatus = 'IN_PROGRESS' | 'DONE' | 'FAILED';

export interface Report {
  readonly id: string;
  readonly key: string;
  readonly startDate: string;
  readonly createdAt: number;
  readonly readyAt: number;
  readonly failed: boolean;
  /** The snapshot taken at creation: later posts and removals do not change it. */
  readonly refs: PostRefs;
  /** The revision of each revised day at creation (absent: 0): later revisions do not change it. */
  readonly revisions: ReadonlyMap<number, number>;
}

interface PageToken {
  readonly reportId: string;
  readonly offset: number;
  readonly issuedAt: number;
}

export type Lookup<T> = { found: T } | { missing: 'unknown' | 'expired' | 'gone' };

function firstTime(seen: Set<string>, id: string): boolean {
  if (seen.has(id)) return false;
  seen.add(id);
  return true;
}

/** Reports and page tokens, on the simulator's clock. */
export class ReportStore {
  readonly #random: Random;
  readonly #reports = new Map<string, Report>();
  readonly #byKey = new Map<string, Report>();
  readonly #tokens = new Map<string, PageToken>();
  /** The highest page number each report has served. */
  readonly #pagesServed = new Map<string, number>();
  /** Reports whose FAILED status a client has seen. */
  readonly #failuresSeen = new Set<string>();
  /** Reports with revised figures whose first page a client has seen. */
  readonly #lateDataSeen = new Set<string>();
  /** Reports removed by a fault (reportGoneAfterPage). */
  readonly #gone = new Set<string>();

  constructor(random: Random) {
    this.#random = random;
  }

  static status(report: Report, now: number): ReportStatus {
    if (now < report.readyAt) return 'IN_PROGRESS';
    return report.failed ? 'FAILED' : 'DONE';
  }

  static expired(report: Report, now: number, ttlMs: number | null): boolean {
    return ttlMs !== null && now - report.createdAt >= ttlMs;
  }

  /**
   * The report an identical creation call within `reuseMs` already made, if any, whatever became of it (FAILED
   * or gone included), as the API does; one that expired is not handed out again.
   */
  reusable(key: string, now: number, reuseMs: number, ttlMs: number | null): Report | undefined {
    const report = this.#byKey.get(key);
    if (
      report === undefined ||
      now - report.createdAt >= reuseMs ||
      ReportStore.expired(report, now, ttlMs)
    ) {
      return undefined;
    }
    return report;
  }

  create(fields: Omit<Report, 'id'>): Report {
    const report: Report = { id: this.#random.guid(), ...fields };
    this.#reports.set(report.id, report);
    this.#byKey.set(report.key, report);
    return report;
  }

  get(id: string, now: number, ttlMs: number | null): Lookup<Report> {
    const report = this.#reports.get(id);
    if (report === undefined) return { missing: 'unknown' };
    if (this.#gone.has(id)) return { missing: 'gone' };
    if (ReportStore.expired(report, now, ttlMs)) return { missing: 'expired' };
    return { found: report };
  }

  /**
   * The report disappears: every later request for it (or its pages) finds nothing; an identical creation call
   * within the reuse period still hands its id back.
   */
  vanish(id: string): void {
    if (!this.#reports.has(id)) return;
    this.#gone.add(id);
  }

  pageServed(report: Report, index: number): void {
    this.#pagesServed.set(report.id, Math.max(index, this.#pagesServed.get(report.id) ?? 0));
  }

  /** The highest page number the report has served (0: none). */
  pagesServed(id: string): number {
    return this.#pagesServed.get(id) ?? 0;
  }

  /** True the first time only. */
  failureSeen(report: Report): boolean {
    return firstTime(this.#failuresSeen, report.id);
  }

  /** True the first time only. */
  lateDataSeen(report: Report): boolean {
    return firstTime(this.#lateDataSeen, report.id);
  }

  /** A fresh GUID for the page at `offset`; tokens stay valid (reusable) until they expire. */
  issueToken(report: Report, offset: number, now: number): string {
    const token = this.#random.guid();
    this.#tokens.set(token, { reportId: report.id, offset, issuedAt: now });
    return token;
  }

  /** The offset a token stands for; a token of another report is unknown to this one. */
  resolveToken(report: Report, token: string, now: number, ttlMs: number | null): Lookup<number> {
    const entry = this.#tokens.get(token);
    if (entry === undefined || entry.reportId !== report.id) return { missing: 'unknown' };
    if (ttlMs !== null && now - entry.issuedAt >= ttlMs) return { missing: 'expired' };
    return { found: entry.offset };
  }
}
