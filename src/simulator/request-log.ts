/** One request as the simulator received it. */
export interface RecordedRequest {
  method: string;
  path: string;
  query: string;
  authorization: string | undefined;
  contentType: string | undefined;
  userAgent: string | undefined;
}

export interface SimulatorStats {
  requests: number;
  byRoute: Record<string, number>;
  byStatus: Record<string, number>;
  /** POST /reports/posts answered 200. */
  creationCalls: number;
  /**
   * The same, by the window asked for (`start..end`), reused reports included: when each call came (ms since the
   * epoch, real time), so that calls by processes alive at the same time can be told apart from a retry after one died.
   */
  creationCallsByWindow: Record<string, number[]>;
  /** Distinct new report ids created. */
  reportsCreated: number;
  reportsCreatedByStartDate: Record<string, number>;
  /**
   * Faults by kind, each counted once it was served (the response sent whole, or the connection cut): `drop`,
   * `rate-limit`, `server-error`, `slow` (a response sent after the configured latency), `fail-report` (a report's
   * FAILED status, once per report), `report-expired`, `report-gone` (reportGoneAfterPage), `page-token-expired`,
   * `creation-outage`, `late-data` (the first page of a report holding revised figures, once per report),
   * `report-status-override`, `corrupt:<kind>`. A fault drawn for a request whose client
   * went away first is not counted: these are what a client can have seen.
   */
  faults: Record<string, number>;
}

/**
 * What a listener hears as it is served (the response sent whole, or the connection cut): `creation` (a creation
 * call answered 200), `page` (a page of records; then `page-with-next` when it has a next page), or a fault kind as
 * counted in SimulatorStats.faults.
 */
export type ServedListener = (kind: string) => void;

const KEPT_REQUESTS = 10_000;

function increment(counts: Record<string, number>, key: string): void {
  counts[key] = (counts[key] ?? 0) + 1;
}

/** Counters and the last requests, for tests to assert on. */
export class RequestLog {
  readonly #recent: RecordedRequest[] = [];
  #requests = 0;
  #creationCalls = 0;
  #reportsCreated = 0;
  readonly #byRoute: Record<string, number> = {};
  readonly #byStatus: Record<string, number> = {};
  readonly #byStartDate: Record<string, number> = {};
  readonly #callsByWindow: Record<string, number[]> = {};
  readonly #faults: Record<string, number> = {};
  readonly #listeners = new Set<ServedListener>();

  request(entry: RecordedRequest): void {
    this.#requests++;
    this.#recent.push(entry);
    // Trimming in batches keeps recording O(1) amortized.
    if (this.#recent.length > KEPT_REQUESTS * 1.5)
      this.#recent.splice(0, this.#recent.length - KEPT_REQUESTS);
  }

  route(route: string): void {
    increment(this.#byRoute, route);
  }

  /** The status sent, or `dropped` when the connection was cut. */
  outcome(status: number | 'dropped'): void {
    increment(this.#byStatus, String(status));
  }

  fault(kind: string): void {
    increment(this.#faults, kind);
    this.served(kind);
  }

  /** Tells the listeners that this was served. */
  served(kind: string): void {
    for (const listener of this.#listeners) listener(kind);
  }

  /** Calls `listener` with everything served from now on, until the returned function is called. */
  listen(listener: ServedListener): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  creationCall(startDate: string, endDate: string): void {
    this.#creationCalls++;
    const window = `${startDate}..${endDate}`;
    this.#callsByWindow[window] = [...(this.#callsByWindow[window] ?? []), Date.now()];
  }

  reportCreated(startDate: string): void {
    this.#reportsCreated++;
    increment(this.#byStartDate, startDate);
  }

  stats(): SimulatorStats {
    return {
      requests: this.#requests,
      byRoute: { ...this.#byRoute },
      byStatus: { ...this.#byStatus },
      creationCalls: this.#creationCalls,
      creationCallsByWindow: Object.fromEntries(
        Object.entries(this.#callsByWindow).map(([window, times]) => [window, [...times]]),
      ),
      reportsCreated: this.#reportsCreated,
      reportsCreatedByStartDate: { ...this.#byStartDate },
      faults: { ...this.#faults },
    };
  }

  requests(): readonly RecordedRequest[] {
    return this.#recent.slice(-KEPT_REQUESTS);
  }
}
