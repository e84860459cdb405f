/**
 * Faults that strike a report at a given page, each once (the knob disarms when it strikes), so that a test can
 * place them exactly: mid-window, or at the page a resumed run starts from.
 */
export interface PageFaults {
  /**
   * The next request for a report that has already served this many pages (or more; 0: its first request)
   * finds it gone (404 report_not_found), and so does every later one for that report (null: off).
   */
  reportGoneAfterPage: number | null;
  /**
   * Requests for page N (N ≥ 2: a page reached by a token) answer 410 page_expired until one such answer has
   * reached its client (null: off).
   */
  pageTokenExpiresAtPage: number | null;
}

export const NO_PAGE_FAULTS: Readonly<PageFaults> = Object.freeze({
  reportGoneAfterPage: null,
  pageTokenExpiresAtPage: null,
});

export function checkPageFaults(faults: Readonly<PageFaults>): void {
  const gone = faults.reportGoneAfterPage;
  if (gone !== null && !(Number.isSafeInteger(gone) && gone >= 0)) {
    throw new RangeError(`fault reportGoneAfterPage must be a page count from 0, got ${gone}`);
  }
  const expires = faults.pageTokenExpiresAtPage;
  if (expires !== null && !(Number.isSafeInteger(expires) && expires >= 2)) {
    throw new RangeError(`fault pageTokenExpiresAtPage must be a page number from 2, got ${expires}`);
  }
}
