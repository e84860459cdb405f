import { inspect } from 'node:util';

const REDACTED = '[redacted]';

/**
 * A value that must never be printed. Every way of turning it into text yields `[redacted]`;
 * only `reveal()` returns it, and only the HTTP client calls that, to build the Authorization header.
 */
export class Secret {
  readonly #value: string;

  constructor(value: string) {
    this.#value = value;
  }

  reveal(): string {
    return this.#value;
  }

  toString(): string {
    return REDACTED;
  }

  toJSON(): string {
    return REDACTED;
  }

  [inspect.custom](): string {
    return REDACTED;
  }
}
