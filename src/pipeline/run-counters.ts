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

  pageStaged(): void {
    this.pages += 1;
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
