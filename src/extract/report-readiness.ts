/** How many of the run's latest reports the aim is taken from: enough to span a round of parallel windows. */
const RECENT = 16;
/** Aimed polls: at the expected moment, then twice more a short step apart, for a report a moment slower. */
const AIMS = 3;
/** The step between aimed polls: a fortieth of the expected time, and never less than this. */
const AIM_STEP_SHARE = 0.025;
const AIM_MIN_STEP_MS = 20;

/**
 * How long the run's new reports took to get DONE, counted from their creation. The reports of one run are made
 * alike (the same filters, windows of the same length), so the next one is likely DONE about as soon as the
 * soonest of the last few: its polls aim there (waitForReport) instead of noticing it up to a whole poll interval
 * late. Only reports created by this run and found not yet DONE at their first poll are recorded: of any other,
 * the age is unknown. The record follows the run: a report DONE sooner lowers the aim at once, and once every
 * recent report needed the later aims, the soonest of them is the new aim.
 */
export class ReportReadiness {
  readonly #recent: number[] = [];

  /** Records that a report was found DONE by a poll sent `doneAfterMs` after its creation. */
  observe(doneAfterMs: number): void {
    this.#recent.push(doneAfterMs);
    if (this.#recent.length > RECENT) this.#recent.shift();
  }

  /**
   * The next moment, counted from a report's creation and later than `sinceCreatedMs`, at which a poll is aimed;
   * undefined when none is left (or no report has been seen DONE yet).
   */
  nextAimMs(sinceCreatedMs: number): number | undefined {
    if (this.#recent.length === 0) return undefined;
    const expected = Math.min(...this.#recent);
    const step = Math.max(AIM_MIN_STEP_MS, expected * AIM_STEP_SHARE);
    for (let aim = 0; aim < AIMS; aim++) {
      const at = expected + aim * step;
      if (at > sinceCreatedMs) return at;
    }
    return undefined;
  }
}
