/**
 * An outage of report creation: while it lasts, POST /reports/posts answers 503 and nothing else is affected
 * (reports already created still serve their pages). It lasts a period of the simulator's clock, or until it
 * is switched off.
 */
export class CreationOutage {
  /** undefined: no outage; null: until switched off; a number: the simulator time it ends. */
  #until: number | null | undefined;

  start(now: number, durationMs?: number): void {
    if (durationMs !== undefined && !(Number.isFinite(durationMs) && durationMs >= 0)) {
      throw new RangeError(`a creation outage needs a non-negative duration in ms, got ${durationMs}`);
    }
    this.#until = durationMs === undefined ? null : now + durationMs;
  }

  stop(): void {
    this.#until = undefined;
  }

  active(now: number): boolean {
    if (this.#until === undefined) return false;
    return this.#until === null || now < this.#until;
  }
}
