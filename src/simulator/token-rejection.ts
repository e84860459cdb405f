/**
 * A token that stops being accepted (revoked, expired, its scope withdrawn): from the Nth request after it is
 * armed, every request answers 401 (or 403), however valid the token was before. Only requests with the right
 * token count; a wrong token is answered 401 anyway.
 */
export class TokenRejection {
  /** undefined: accepted; otherwise how many more requests are accepted before the rejections start. */
  #remaining: number | undefined;
  #status: 401 | 403 = 401;

  start(afterRequests: number, status: 401 | 403): void {
    if (!(Number.isSafeInteger(afterRequests) && afterRequests >= 0)) {
      throw new RangeError(`afterRequests must be a non-negative integer, got ${afterRequests}`);
    }
    this.#remaining = afterRequests;
    this.#status = status;
  }

  stop(): void {
    this.#remaining = undefined;
  }

  /** Called once per request that carries the right token: the status to answer instead, or null. */
  next(): 401 | 403 | null {
    if (this.#remaining === undefined) return null;
    if (this.#remaining > 0) {
      this.#remaining -= 1;
      return null;
    }
    return this.#status;
  }
}
