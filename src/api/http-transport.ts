import type { IncomingMessage } from 'node:http';
import { pipeline, type Readable } from 'node:stream';
import { constants, createBrotliDecompress, createGunzip, createInflate } from 'node:zlib';

/** One HTTP request as the client sends it. */
export interface HttpRequest {
  readonly method: 'GET' | 'POST';
  readonly url: URL;
  readonly headers: Readonly<Record<string, string>>;
  readonly body?: string;
  /** Ends the request, and the reading of its body, when it aborts. */
  readonly signal: AbortSignal;
}

/** An answer's status and headers; its body still to be read. */
export interface HttpAnswer {
  readonly status: number;
  /** A header's value (names in lower case), undefined when the answer has none. */
  header(name: string): string | undefined;
  /** The body as chunks of bytes, decoded as its Content-Encoding says. */
  readonly body: AsyncIterable<Buffer>;
  /** Stops reading the body: its connection is closed rather than drained. */
  cancel(): void;
}

// Flushed as fetch flushes them: a compressed body cut short gives what it held, and the length check decides.
const LENIENT = { flush: constants.Z_SYNC_FLUSH, finishFlush: constants.Z_SYNC_FLUSH };

/**
 * HTTP/1.1 over node:http and node:https, answering as fetch did: connections kept alive between requests, a
 * redirect is an answer (never followed), gzip and deflate (and br over TLS) asked for and decoded. Not fetch: a
 * process's first fetch loads and compiles undici, about 40 ms of CPU, which every run of a fan-out started at
 * once on few cores pays before its first request.
 */
export class HttpTransport {
  // Not imported: the ESM face of node:http reads each of its exports, WebSocket's too, which loads undici anyway.
  readonly #http = process.getBuiltinModule('node:http');
  readonly #https = process.getBuiltinModule('node:https');
  readonly #httpAgent = new this.#http.Agent({ keepAlive: true });
  readonly #httpsAgent = new this.#https.Agent({ keepAlive: true });

  /** Resolves once the answer's status and headers have arrived; rejects on a network failure or an abort. */
  send(request: HttpRequest): Promise<HttpAnswer> {
    const tls = request.url.protocol === 'https:';
    const headers: Record<string, string> = {
      'accept-encoding': tls ? 'br, gzip, deflate' : 'gzip, deflate',
      ...request.headers,
    };
    if (request.body !== undefined) headers['content-length'] = String(Buffer.byteLength(request.body));
    return new Promise((resolve, reject) => {
      const options = { method: request.method, headers, signal: request.signal };
      const sent = tls
        ? this.#https.request(request.url, { ...options, agent: this.#httpsAgent }, (r) => resolve(answer(r)))
        : this.#http.request(request.url, { ...options, agent: this.#httpAgent }, (r) => resolve(answer(r)));
      sent.on('error', reject);
      sent.end(request.body);
    });
  }
}

function answer(response: IncomingMessage): HttpAnswer {
  const body = decoded(response);
  return {
    status: response.statusCode ?? 0,
    header(name) {
      const value = response.headers[name];
      return Array.isArray(value) ? value.join(', ') : value;
    },
    body,
    // A decoder piped from it ends with it.
    cancel: () => response.destroy(),
  };
}

/** The body through the decoder its Content-Encoding names; as received for none, or for one fetch decodes neither. */
function decoded(response: IncomingMessage): Readable {
  const coding = response.headers['content-encoding']?.trim().toLowerCase();
  const decoder =
    coding === 'gzip' || coding === 'x-gzip'
      ? createGunzip(LENIENT)
      : coding === 'deflate'
        ? createInflate(LENIENT)
        : coding === 'br'
          ? createBrotliDecompress({
              flush: constants.BROTLI_OPERATION_FLUSH,
              finishFlush: constants.BROTLI_OPERATION_FLUSH,
            })
          : undefined;
  if (decoder === undefined) return response;
  // A failure on either side (a cut connection, a corrupt stream) ends the decoder with it, where it is read.
  return pipeline(response, decoder, () => {});
}
