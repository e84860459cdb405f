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

/** Where a page starts: its first post, its number, and the reading (from a first page) it belongs to. */
export interface PagePosition {
  readonly offset: number;
  /** 1-based. */
  readonly index: number;
  /** 0 for the report's first reading, then one more for each first page served again. */
  readonly pass: number;
}

interface PageToken extends PagePosition {
  readonly reportId: string;
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
  /** The readings each report has begun (first pages served). */
  readonly #passes = new Map<string, number>();
  /** With a sliding reuse period: when an identical creation call last returned each report (by key). */
  readonly #lastAsked = new Map<string, number>();

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
  reusable(
    key: string,
    now: number,
    reuseMs: number,
    ttlMs: number | null,
    slides = false,
  ): Report | undefined {
    const report = this.#byKey.get(key);
    if (report === undefined) return undefined;
    const from = slides ? (this.#lastAsked.get(key) ?? report.createdAt) : report.createdAt;
    if (now - from >= reuseMs || ReportStore.expired(report, now, ttlMs)) return undefined;
    if (slides) this.#lastAsked.set(key, now);
    return report;
  }

  create(fields: Omit<Report, 'id'>): Report {
    const report: Report = { id: this.#random.guid(), ...fields };
    this.#reports.set(report.id, report);
    this.#byKey.set(report.key, report);
    this.#lastAsked.set(report.key, report.createdAt);
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

  /** The position of a first page served now: a new reading of the report. */
  firstPage(report: Report): PagePosition {
    const pass = this.#passes.get(report.id) ?? 0;
    this.#passes.set(report.id, pass + 1);
    return { offset: 0, index: 1, pass };
  }

  /** A fresh GUID for the page at `position`; tokens stay valid (reusable) until they expire. */
  issueToken(report: Report, position: PagePosition, now: number): string {
    const token = this.#random.guid();
    this.#tokens.set(token, { reportId: report.id, ...position, issuedAt: now });
    return token;
  }

  /** The page a token stands for; a token of another report is unknown to this one. */
  resolveToken(report: Report, token: string, now: number, ttlMs: number | null): Lookup<PagePosition> {
    const entry = this.#tokens.get(token);
    if (entry === undefined || entry.reportId !== report.id) return { missing: 'unknown' };
    if (ttlMs !== null && now - entry.issuedAt >= ttlMs) return { missing: 'expired' };
    return { found: { offset: entry.offset, index: entry.index, pass: entry.pass } };
  }
}
