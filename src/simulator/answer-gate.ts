/** What a gate can hold: creation calls, pages of records, or the answers of request faults (429, 5xx). */
export type GateScope = 'creation' | 'page' | 'request-fault';

/** A gate that lets `after` answers through, then holds the next ones until released. */
export interface AnswerGate {
  /** Resolves once an answer is held: its request came, and waits. */
  readonly held: Promise<void>;
  /** Resolves once the client of a held answer went away: that answer goes at once, to nobody. */
  readonly abandoned: Promise<void>;
  /** Lets every held answer go, and every later one. */
  release(): void;
}

/**
 * Holds answers of one scope past a count, so that a test acts at a known point of a run (kills it while the
 * next page is held, say) instead of guessing one with latency.
 */
export class Gate implements AnswerGate {
  readonly held: Promise<void>;
  readonly abandoned: Promise<void>;
  #markHeld: () => void = () => {};
  #markAbandoned: () => void = () => {};
  #passed = 0;
  #open = false;
  readonly #waiting: (() => void)[] = [];
  readonly #after: number;

  constructor(after: number) {
    if (!(Number.isSafeInteger(after) && after >= 0)) {
      throw new RangeError(`a gate needs a number of answers to let through from 0, got ${after}`);
    }
    this.#after = after;
    this.held = new Promise((resolve) => {
      this.#markHeld = resolve;
    });
    this.abandoned = new Promise((resolve) => {
      this.#markAbandoned = resolve;
    });
  }

  /** Resolves when the answer may go: at once, once the gate is released, or once `gone` (its client left). */
  pass(gone: Promise<void>): Promise<void> {
    if (this.#open || this.#passed < this.#after) {
      this.#passed += 1;
      return Promise.resolve();
    }
    this.#markHeld();
    return new Promise((resolve) => {
      this.#waiting.push(resolve);
      void gone.then(() => {
        resolve();
        this.#markAbandoned();
      });
    });
  }

  release(): void {
    this.#open = true;
    for (const resolve of this.#waiting.splice(0)) resolve();
  }
}
