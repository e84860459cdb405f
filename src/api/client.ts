import { isUtf8 } from 'node:buffer';
import { setTimeout as sleep } from 'node:timers/promises';
import pRetry from 'p-retry';
import { type ApiConfig, SETTINGS } from '../config.js';
import { backoffMs, httpErrorCode, RETRY_WAITS, retriesRequest } from '../error-policy.js';
import { ApiError, DataError, EtlError, oneLine } from '../errors.js';
import type { Logger } from '../logger.js';
import type { BufferPool } from '../model/buffer-pool.js';
import { VERSION } from '../version.js';
import { connectionFailure } from './connection-failure.js';
import { parseExactJson } from './exact-json.js';
import { HttpError } from './http-error.js';
import { type HttpAnswer, HttpTransport } from './http-transport.js';
import { retryAfterMs } from './retry-after.js';
import { asBuffer, withoutBom } from './utf8.js';

/** What a retry listener learns about each retry before it waits. */
export interface RetryEvent {
  readonly endpoint: string;
  /** The attempt that failed (1 for the first request). */
  readonly attempt: number;
  readonly error: ApiError;
  readonly delayMs: number;
}

export interface ApiClientOptions {
  /** Called before every retry; the run summary counts them. */
  readonly onRetry?: (event: RetryEvent) => void;
}

export interface RequestOptions {
  readonly query?: Readonly<Record<string, string>>;
  readonly signal?: AbortSignal;
}

export interface DeferredJsonOptions extends RequestOptions {
  /**
   * Where a body of declared length is read into: the answer's `utf8` is then a view of the pool's memory, which
   * the caller gives back once nothing reads it (BufferPool). A body kept as text goes back at once.
   */
  readonly bodies?: BufferPool;
}

/**
 * A downloaded JSON body, parsed only when asked: a caller that downloads ahead parses it when it is used, so
 * that the objects it makes die young. It is kept as the UTF-8 of its text, for a reader that reads the bytes: the
 * text is made only when asked (and then once).
 */
export interface DeferredJson {
  /** The size of the body as received, in bytes. */
  readonly bytes: number;
  /** The body as received. */
  readonly text: string;
  /**
   * The UTF-8 of `text`: the body as received when it is valid UTF-8 (but a byte order mark, which the text leaves
   * out too), else the text decoded as for any answer and encoded again.
   */
  readonly utf8: Buffer;
  /** The body parsed exactly; DataError('PAGE_MALFORMED') when it is not JSON. */
  parse(): unknown;
}

/** Whether a successful answer is kept as bytes (the UTF-8 of its text), and where they are read into. */
type AsBytes = false | { readonly bodies: BufferPool | undefined };

/** A successful answer before parsing: its text, or (when asked for bytes) the UTF-8 of its text. */
interface RawResponse {
  readonly endpoint: string;
  readonly status: number;
  /** Made from `utf8` when not made yet. */
  text: string | undefined;
  readonly utf8: Buffer | undefined;
  /** The body's size as received, in bytes. */
  readonly length: number;
}

const MAX_BODY_IN_MESSAGE = 300;
const DEFAULT_MAX_RESPONSE_BYTES = Number(SETTINGS.maxResponseBytes.default);

/**
 * The HTTP client of the v4 API: bearer authentication, exact JSON, a timeout per attempt, and retries of
 * transient failures (network errors, timeouts, 429, 5xx) honouring Retry-After. The token is only ever put
 * in the Authorization header: never in a URL, a log line or an error.
 */
export class ApiClient {
  readonly #config: ApiConfig;
  readonly #logger: Logger;
  readonly #onRetry: ((event: RetryEvent) => void) | undefined;
  readonly #transport: HttpTransport;

  constructor(config: ApiConfig, logger: Logger, options: ApiClientOptions = {}) {
    this.#config = config;
    this.#logger = logger.child({ component: 'api' });
    this.#onRetry = options.onRetry;
    this.#transport = new HttpTransport({
      proxy: config.proxy,
      tls: config.tls,
      proxyConnectTimeoutMs: config.requestTimeoutMs,
    });
    if (config.proxy !== undefined) {
      this.#logger.debug(
        { proxy: config.proxy.origin, from: config.proxy.source },
        'the API through a proxy',
      );
    }
  }

  /** The API's base URL (never carries credentials: config refuses them). */
  get baseUrl(): URL {
    return this.#config.baseUrl;
  }

  /** GET a JSON resource below the base URL (`path` relative to it, e.g. `reports/posts/dimensions`). */
  async getJson(path: string, options: RequestOptions = {}): Promise<unknown> {
    return this.parse(await this.request('GET', path, undefined, options));
  }

  /**
   * GET, returning the body's size and bytes at once and the body itself when asked (the pager downloads ahead, and
   * reads a page from its bytes: text decoded from bytes that are then dropped is most of what reading one costs).
   */
  async getDeferredJson(path: string, options: DeferredJsonOptions = {}): Promise<DeferredJson> {
    const response = await this.request('GET', path, undefined, options, { bodies: options.bodies });
    const utf8 = response.utf8 ?? Buffer.from(textOf(response), 'utf8');
    return {
      bytes: response.length,
      get text() {
        return textOf(response);
      },
      utf8,
      parse: () => this.parse(response),
    };
  }

  /** POST a JSON body. */
  async postJson(path: string, body: unknown, options: { signal?: AbortSignal } = {}): Promise<unknown> {
    return this.parse(await this.request('POST', path, JSON.stringify(body), options));
  }

  private async request(
    method: 'GET' | 'POST',
    path: string,
    body: string | undefined,
    options: RequestOptions,
    asBytes: AsBytes = false,
  ): Promise<RawResponse> {
    const relative = path.replace(/^\/+/, '');
    const url = new URL(relative, this.#config.baseUrl);
    for (const [key, value] of Object.entries(options.query ?? {})) url.searchParams.set(key, value);
    const endpoint = `${method} /${relative}`;
    const { signal } = options;
    const retry = this.#config.retry;
    const started = performance.now();
    try {
      return await pRetry((attempt) => this.attempt(method, url, endpoint, body, attempt, signal, asBytes), {
        retries: Math.max(0, retry.maxAttempts - 1),
        maxRetryTime: retry.maxRetryTimeMs,
        // The delay is chosen in shouldRetry (it must honour Retry-After), so p-retry's own wait is zero.
        minTimeout: 0,
        ...(signal ? { signal } : {}),
        shouldRetry: async ({ error, attemptNumber }) => {
          if (!(error instanceof ApiError) || !retriesRequest(error)) return false;
          const delayMs = this.delayFor(error, attemptNumber);
          const remaining = retry.maxRetryTimeMs - (performance.now() - started);
          if (delayMs > remaining) return false;
          this.#logger.warn(
            { endpoint, attempt: attemptNumber, status: error.status, code: error.code, delayMs },
            'request failed; retrying',
          );
          this.#onRetry?.({ endpoint, attempt: attemptNumber, error, delayMs });
          if (delayMs > 0) {
            await sleep(delayMs, undefined, signal ? { signal } : undefined).catch(() => {
              throw aborted(endpoint, signal);
            });
          }
          return true;
        },
      });
    } catch (error) {
      if (signal?.aborted && !(error instanceof EtlError)) throw aborted(endpoint, signal);
      throw error;
    }
  }

  private delayFor(error: ApiError, attempt: number): number {
    if (error instanceof HttpError && error.retryAfterMs !== undefined) return error.retryAfterMs;
    return backoffMs(attempt, this.#config.retry.minDelayMs, RETRY_WAITS.request.maxMs);
  }

  private async attempt(
    method: 'GET' | 'POST',
    url: URL,
    endpoint: string,
    body: string | undefined,
    attempt: number,
    signal: AbortSignal | undefined,
    asBytes: AsBytes,
  ): Promise<RawResponse> {
    const bodies = asBytes ? asBytes.bodies : undefined;
    // One deadline for the whole attempt: DNS, connecting, TLS, the headers and the body.
    const timeout = AbortSignal.timeout(this.#config.requestTimeoutMs);
    const combined = signal ? AbortSignal.any([signal, timeout]) : timeout;
    const headers: Record<string, string> = {
      authorization: `Bearer ${this.#config.token.reveal()}`,
      accept: 'application/json',
      // Named, so that the API's operators can tell its requests apart.
      'user-agent': `post-reports-etl/${VERSION}`,
    };
    if (body !== undefined) headers['content-type'] = 'application/json';
    const started = performance.now();
    let text: string | undefined;
    let bytes: Uint8Array | undefined;
    let utf8: Buffer | undefined;
    let status: number;
    let length: number;
    let response: HttpAnswer;
    try {
      // A redirect is an answer, never followed: it would carry the token to wherever it points.
      response = await this.#transport.send({
        method,
        url,
        headers,
        signal: combined,
        ...(body !== undefined ? { body } : {}),
      });
      status = response.status;
      bytes = await this.readBody(response, endpoint, bodies);
      length = bytes.byteLength;
      const contentType = response.header('content-type');
      // An error answer is read for its message: as text.
      if (asBytes && status >= 200 && status <= 299) utf8 = this.validUtf8(bytes, contentType);
      if (utf8 === undefined) text = this.decode(bytes, contentType, endpoint, status);
    } catch (error) {
      if (error instanceof EtlError) throw error;
      if (signal?.aborted) throw aborted(endpoint, signal);
      throw this.transportError(error, endpoint, attempt, timeout.aborted);
    } finally {
      // Only the bytes kept as the answer's utf8 are still read; text is a copy.
      if (utf8 === undefined) bodies?.give(bytes);
    }
    this.#logger.debug(
      { endpoint, status, attempt, ms: Math.round(performance.now() - started), bytes: length },
      'response',
    );
    if (status < 200 || status > 299) throw this.httpError(endpoint, status, response, text!, attempt);
    return { endpoint, status, text, utf8, length };
  }

  /**
   * The body as it is when it is valid UTF-8, declared so or by default (without a byte order mark, as decode
   * leaves it out); undefined otherwise, for decode to decode, replace and count as it does for every answer.
   */
  private validUtf8(bytes: Uint8Array, contentType: string | undefined): Buffer | undefined {
    const charset = charsetOf(contentType);
    if (charset !== 'utf-8' && charset !== 'utf8') return undefined;
    return isUtf8(bytes) ? withoutBom(asBuffer(bytes)) : undefined;
  }

  /**
   * The body's bytes, refused without reading the rest as soon as they pass the limit (a declared length beyond it
   * is refused before reading any): a body that never ends would otherwise fill the memory until the timeout.
   */
  private async readBody(response: HttpAnswer, endpoint: string, bodies?: BufferPool): Promise<Uint8Array> {
    const most = this.#config.maxResponseBytes ?? DEFAULT_MAX_RESPONSE_BYTES;
    const share = this.#config.bodyShareBytes ?? most;
    const limit = Math.min(most, share);
    const setting =
      share < most
        ? `a response's share of ${SETTINGS.bodyMemoryBytes.env} with ${SETTINGS.concurrency.env} windows at once`
        : SETTINGS.maxResponseBytes.env;
    const tooLarge = (size: string) =>
      new DataError(
        'PAGE_MALFORMED',
        `${endpoint} answered ${response.status} with a body of ${size}, more than the ${limit} bytes read (${setting}): refused without reading the rest`,
      );
    const declared = Number(response.header('content-length') ?? Number.NaN);
    if (declared > limit) {
      response.cancel();
      throw tooLarge(`${declared} bytes`);
    }
    // Read into memory of the pool's: no list of chunks to join, and no page-sized buffer left for V8 to collect.
    if (bodies !== undefined && declared > 0) return readInto(response, bodies, declared, limit, tooLarge);
    const chunks: Buffer[] = [];
    let size = 0;
    for await (const chunk of response.body) {
      size += chunk.byteLength;
      if (size > limit) {
        response.cancel();
        throw tooLarge('more bytes');
      }
      chunks.push(chunk);
    }
    return chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, size);
  }

  /**
   * The body as text, decoded by its declared charset (UTF-8, JSON's own, when none is declared). Bytes that are not
   * valid in it are replaced by U+FFFD, counted and logged, as NUL characters are: failing every window for a
   * byte no run can repair would help nobody, and U+FFFD marks the spot. A charset no decoder knows is refused.
   */
  private decode(
    bytes: Uint8Array,
    contentType: string | undefined,
    endpoint: string,
    status: number,
  ): string {
    const charset = charsetOf(contentType);
    let decoder: InstanceType<typeof TextDecoder>;
    try {
      decoder = new TextDecoder(charset, { fatal: true });
    } catch {
      // An error answer is read for its message only: its status decides what happens next.
      if (status < 200 || status > 299) return new TextDecoder().decode(bytes);
      throw new DataError(
        'PAGE_MALFORMED',
        `${endpoint} answered ${status} in charset ${JSON.stringify(oneLine(charset, 40))}, which the connector cannot decode`,
      );
    }
    try {
      return decoder.decode(bytes);
    } catch {
      const text = new TextDecoder(charset).decode(bytes);
      const replaced =
        countReplacements(text) - (decoder.encoding === 'utf-8' ? countEncodedReplacements(bytes) : 0);
      this.#logger.warn(
        { endpoint, charset: decoder.encoding, count: replaced },
        `bytes that are not valid ${decoder.encoding} replaced by U+FFFD`,
      );
      return text;
    }
  }

  // Invalid JSON is not retried: the service answered, and would answer the same again.
  private parse(response: RawResponse): unknown {
    const { endpoint, status } = response;
    const text = textOf(response);
    try {
      return parseExactJson(text);
    } catch (error) {
      throw new DataError(
        'PAGE_MALFORMED',
        `${endpoint} answered ${status} with invalid JSON (${error instanceof Error ? error.message : String(error)}): ${this.scrub(oneLine(text, 120))}`,
        { cause: error },
      );
    }
  }

  /** A request that got no answer: timed out, or failed on the network. */
  private transportError(error: unknown, endpoint: string, attempt: number, timedOut: boolean): ApiError {
    if (timedOut) {
      return new ApiError(
        'API_TIMEOUT',
        `${endpoint} did not answer within ${this.#config.requestTimeoutMs} ms (attempt ${attempt}; ${SETTINGS.requestTimeoutMs.env})`,
        { endpoint },
      );
    }
    const needsAPerson = connectionFailure(error, endpoint, this.#config);
    if (needsAPerson !== undefined) return needsAPerson;
    return new ApiError(
      'API_NETWORK_ERROR',
      `${endpoint} failed: ${this.scrub(networkReason(error))} (attempt ${attempt})`,
      { endpoint, cause: error },
    );
  }

  private httpError(
    endpoint: string,
    status: number,
    response: HttpAnswer,
    text: string,
    attempt: number,
  ): HttpError {
    const body = this.scrub(oneLine(text, MAX_BODY_IN_MESSAGE));
    let detail = body === '' ? '(empty body)' : body;
    if (status >= 300 && status < 400) {
      const location = this.scrub(oneLine(response.header('location') ?? '(no location)', 200));
      detail = `a redirect to ${location}, not followed so that the token stays with the configured host`;
    }
    const what =
      httpErrorCode(status) === 'TOKEN_REJECTED'
        ? `the API rejected the token (${SETTINGS.token.env}): ${detail}`
        : detail;
    return new HttpError(`${endpoint} answered ${status} (attempt ${attempt}): ${what}`, {
      status,
      endpoint,
      body,
      retryAfterMs: retryAfterMs(response.header('retry-after'), Date.now()),
    });
  }

  /** Belt and braces: a server that echoes the token must not put it into our messages. */
  private scrub(text: string): string {
    const token = this.#config.token.reveal();
    return token.length > 0 && text.includes(token) ? text.split(token).join('[redacted]') : text;
  }
}

/** The charset a Content-Type declares, lower case; UTF-8, JSON's own, when it declares none. */
function charsetOf(contentType: string | undefined): string {
  return /;\s*charset\s*=\s*"?([^";\s]+)/i.exec(contentType ?? '')?.[1]?.toLowerCase() ?? 'utf-8';
}

function textOf(response: RawResponse): string {
  response.text ??= response.utf8!.toString('utf8');
  return response.text;
}

function aborted(endpoint: string, signal: AbortSignal | undefined): ApiError {
  const reason = signal?.reason;
  const why = reason instanceof Error ? reason.message : reason === undefined ? 'aborted' : String(reason);
  return new ApiError('ABORTED', `${endpoint} was aborted: ${oneLine(why, 200)}`, {
    endpoint,
    cause: reason,
  });
}

function networkReason(error: unknown): string {
  if (!(error instanceof Error)) return String(error);
  const cause = error.cause;
  if (cause instanceof Error) {
    const code = (cause as NodeJS.ErrnoException).code;
    return oneLine(
      code ? `${error.message}: ${code} ${cause.message}` : `${error.message}: ${cause.message}`,
      200,
    );
  }
  return oneLine(error.message, 200);
}

function countReplacements(text: string): number {
  let count = 0;
  for (let at = text.indexOf('\uFFFD'); at !== -1; at = text.indexOf('\uFFFD', at + 1)) count += 1;
  return count;
}

/** U+FFFD written in the body itself (EF BF BD): not a replacement. */
function countEncodedReplacements(bytes: Uint8Array): number {
  let count = 0;
  for (let at = bytes.indexOf(0xef); at !== -1; at = bytes.indexOf(0xef, at + 1)) {
    if (bytes[at + 1] === 0xbf && bytes[at + 2] === 0xbd) count += 1;
  }
  return count;
}

/**
 * A body read into a buffer of the pool's, sized by its declared length. More bytes than declared (a body decoded
 * from a compressed one) move to a larger buffer; the limit holds as for any body. A failed read gives its buffer
 * back.
 */
async function readInto(
  response: HttpAnswer,
  pool: BufferPool,
  declared: number,
  limit: number,
  tooLarge: (size: string) => Error,
): Promise<Buffer> {
  let into = Buffer.from(pool.take(declared));
  let size = 0;
  try {
    for await (const value of response.body) {
      const end = size + value.byteLength;
      if (end > limit) {
        response.cancel();
        throw tooLarge('more bytes');
      }
      if (end > into.length) {
        const larger = Buffer.from(pool.take(Math.min(2 * end, limit)));
        into.copy(larger, 0, 0, size);
        pool.give(into);
        into = larger;
      }
      into.set(value, size);
      size = end;
    }
    return into.subarray(0, size);
  } catch (error) {
    pool.give(into);
    throw error;
  }
}
