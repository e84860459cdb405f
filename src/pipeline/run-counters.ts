import type { PageReading } from '../extract/pager.js';

/** What a run has done so far, for its summary: the one place its counts are kept. */
export class RunCounters {
  /** Posts committed (not merely staged). */
  posts = 0;
  pages = 0;
  reportsCreated = 0;
  /** Windows committed. */
  loaded = 0;
  /** Requests the API client retried. */
  retries = 0;
  /** Pages read, and those read the full way (exact-json.ts) rather than in one pass (page-decoder.ts). */
  pagesRead = 0;
  pagesTheFullWay = 0;
  /** Values (fields other than null) read, and those read the full way: a page's, or one nested value's. */
  valuesRead = 0;
  valuesTheFullWay = 0;

  pageStaged(): void {
    this.pages += 1;
  }

  pageRead(reading: PageReading): void {
    this.pagesRead += 1;
    if (!reading.onePass) this.pagesTheFullWay += 1;
    this.valuesRead += reading.values;
    this.valuesTheFullWay += reading.valuesTheFullWay;
  }

  reportCreated(): void {
    this.reportsCreated += 1;
  }

  retried(): void {
    this.retries += 1;
  }

  committed(windows: number, posts: number): void {
    this.loaded += windows;
    this.posts += posts;
  }
}
