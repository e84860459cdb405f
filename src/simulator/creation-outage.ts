/**
 * An outage of report creation: while it lasts, POST /reports/posts answers 503 and nothing else is affected
 * (reports already created still serve their pages). It lasts a period of the simulator's clock, a number of
 * creation calls answered 503, or until it is switched off.
 */
export class CreationOutage {
  /** undefined: no outage; null: until switched off; a number: the simulator time it ends. */
  #until: number | null | undefined;
  /** Creation calls still to refuse (null: not counted). */
  #calls: number | null = null;

  start(now: number, limit?: number | { readonly calls: number }): void {
    if (typeof limit === 'object') {
      if (!(Number.isSafeInteger(limit.calls) && limit.calls >= 1)) {
        throw new RangeError(`a creation outage needs a number of calls from 1, got ${limit.calls}`);
      }
      this.#until = null;
      this.#calls = limit.calls;
      return;
    }
    if (limit !== undefined && !(Number.isFinite(limit) && limit >= 0)) {
      throw new RangeError(`a creation outage needs a non-negative duration in ms, got ${limit}`);
    }
    this.#until = limit === undefined ? null : now + limit;
    this.#calls = null;
  }

  stop(): void {
    this.#until = undefined;
    this.#calls = null;
  }

  active(now: number): boolean {
    if (this.#until === undefined) return false;
    return this.#until === null || now < this.#until;
  }

  /** A creation call was answered 503: an outage of so many calls ends with its last one. */
  refused(): void {
    if (this.#calls === null) return;
    this.#calls -= 1;
    if (this.#calls <= 0) this.stop();
  }
}
