import { stopsTheRun } from '../error-policy.js';
import type { EtlError } from '../errors.js';

/**
 * Stops the whole run at once on an error no window can get past, instead of failing the windows one by one:
 * its `signal` aborts then (or when the caller's signal does), and everything of the run listens to it. The
 * windows it stops are interrupted, not failed: the next run, with a valid token or its database back, resumes
 * them.
 */
export class RunStop {
  readonly #controller = new AbortController();
  readonly signal: AbortSignal;
  #cause: EtlError | undefined;

  constructor(parent?: AbortSignal) {
    this.signal = parent ? AbortSignal.any([parent, this.#controller.signal]) : this.#controller.signal;
  }

  /** What stopped the run, if an error did (not the caller's signal). */
  get cause(): EtlError | undefined {
    return this.#cause;
  }

  /**
   * A signal of its own for one window or one commit, aborted with the run's. AbortSignal.any links it without a
   * listener on the run's signal, so that the listeners of windows in flight never pile up there: each window's
   * go on its own signal and leave with it.
   */
  child(): AbortSignal {
    return AbortSignal.any([this.signal]);
  }

  /** Stops the run on an error of its own that no window can get past (its database lost for good). */
  fail(error: EtlError): void {
    if (this.#cause === undefined && !this.signal.aborted) {
      this.#cause = error;
      this.#controller.abort(error);
    }
  }

  /** Stops the run when `error` is one that stops it; true when the run is (now or already) stopped by one. */
  check(error: unknown): boolean {
    if (!stopsTheRun(error)) return this.#cause !== undefined;
    if (this.#cause === undefined && !this.signal.aborted) {
      this.#cause = error;
      this.#controller.abort(error);
    }
    return true;
  }
}
