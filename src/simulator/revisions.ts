/**
 * Restated figures (late data): how many times each day's figures were revised. A report keeps the revisions
 * of the moment it was created, so a report created before a revision serves the old figures and one created
 * after serves the new ones, as the real API does when its data is corrected.
 */
export class Revisions {
  readonly #byDay = new Map<number, number>();

  revise(day: number): void {
    this.#byDay.set(day, this.of(day) + 1);
  }

  /** 0 for a day never revised. */
  of(day: number): number {
    return this.#byDay.get(day) ?? 0;
  }

  /** The revised days of startDay..endDay with their revision, frozen: what a report created now keeps. */
  snapshot(startDay: number, endDay: number): ReadonlyMap<number, number> {
    const kept = new Map<number, number>();
    for (const [day, revision] of this.#byDay) {
      if (day >= startDay && day <= endDay) kept.set(day, revision);
    }
    return kept;
  }
}
