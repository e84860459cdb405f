import { SETTINGS } from '../config.js';
import { EtlError } from '../errors.js';

/**
 * Fails a window that makes no progress for too long, saying what it was waiting for. Its `signal` aborts on a
 * stall or when the run's own signal aborts; everything the window does listens to it.
 */
export class Watchdog {
  readonly #controller = new AbortController();
  readonly #signal: AbortSignal;
  readonly #timer: NodeJS.Timeout;
  #lastProgress = Date.now();
  #waitingFor = 'the window to start';
  #stalled: EtlError | undefined;

  constructor(stallTimeoutMs: number, parent?: AbortSignal) {
    // Linked, not listened to: a listener per window on the run's signal would outnumber Node's warning limit.
    this.#signal = parent ? AbortSignal.any([parent, this.#controller.signal]) : this.#controller.signal;
    this.#timer = setInterval(
      () => {
        const idle = Date.now() - this.#lastProgress;
        if (idle >= stallTimeoutMs && !this.#signal.aborted) {
          this.#stalled = new EtlError(
            'NO_PROGRESS',
            `no progress for ${Math.round(idle / 1000)} s while waiting for ${this.#waitingFor} (${SETTINGS.stallTimeoutMs.env})`,
          );
          this.#controller.abort(this.#stalled);
        }
      },
      Math.max(100, Math.min(5000, Math.floor(stallTimeoutMs / 4))),
    );
    // Kept referenced until stop(): a stall that leaves nothing else pending (a connection lost with nothing to
    // say so) must end as NO_PROGRESS, not as a process that exits in the middle of its work with nothing said.
  }

  get signal(): AbortSignal {
    return this.#signal;
  }

  progress(): void {
    this.#lastProgress = Date.now();
  }

  waitingFor(what: string): void {
    this.#waitingFor = what;
    this.#lastProgress = Date.now();
  }

  /** The error to report: the stall, when the watchdog is what stopped the work. */
  reason(error: unknown): unknown {
    return this.#stalled ?? error;
  }

  stop(): void {
    clearInterval(this.#timer);
  }
}
