import type { Agent as HttpAgent, IncomingMessage } from 'node:http';
import type { Agent as HttpsAgent } from 'node:https';
import { pipeline, type Readable } from 'node:stream';
import type { ConnectionOptions } from 'node:tls';
import { constants, createBrotliDecompress, createGunzip, createInflate } from 'node:zlib';
import type { ApiTlsConfig, ProxyConfig } from '../config.js';
import { ProxyError, proxyUnreachable } from './proxy-error.js';

/** One HTTP request as the client sends it. */
export interface HttpRequest {
  readonly method: 'GET' | 'POST' | 'PUT';
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

/** How the transport reaches the API: through a proxy or not, with TLS options beyond Node's defaults or not. */
export interface TransportOptions {
  readonly proxy?: ProxyConfig | undefined;
  readonly tls?: ApiTlsConfig | undefined;
  /** How long a proxy may take to answer a CONNECT (default 30 s). */
  readonly proxyConnectTimeoutMs?: number;
}

const PROXY_CONNECT_TIMEOUT_MS = 30_000;

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
  readonly #options: TransportOptions;
  #httpsAgent: HttpsAgent | undefined;
  /** The agent of https:// requests through the proxy: loaded with its module at the first one. */
  #tunnelAgent: Promise<HttpsAgent> | undefined;

  constructor(options: TransportOptions = {}) {
    this.#options = options;
  }

  /** Resolves once the answer's status and headers have arrived; rejects on a network failure or an abort. */
  async send(request: HttpRequest): Promise<HttpAnswer> {
    const tls = request.url.protocol === 'https:';
    const headers: Record<string, string> = {
      'accept-encoding': tls ? 'br, gzip, deflate' : 'gzip, deflate',
      ...request.headers,
    };
    if (request.body !== undefined) headers['content-length'] = String(Buffer.byteLength(request.body));
    const { proxy } = this.#options;
    const agent: HttpAgent | HttpsAgent = tls
      ? proxy === undefined
        ? this.#directHttpsAgent()
        : await this.#tunnelled(proxy)
      : this.#httpAgent;
    // http:// through the proxy: the whole URL as the target, to the proxy.
    const target =
      !tls && proxy !== undefined
        ? (await import('./proxy-tunnel.js')).absoluteFormOptions(proxy, request.url, headers)
        : undefined;
    return new Promise((resolve, reject) => {
      const options = { method: request.method, headers, signal: request.signal, agent };
      const onAnswer = (response: IncomingMessage): void => {
        if (target !== undefined && proxy !== undefined && response.statusCode === 407) {
          response.destroy();
          reject(
            new ProxyError(proxy.origin, 407, `the proxy ${proxy.origin} (${proxy.source}) answered 407`),
          );
          return;
        }
        resolve(answer(response));
      };
      const sent =
        target !== undefined
          ? this.#http.request({ ...target, method: request.method, signal: request.signal, agent }, onAnswer)
          : tls
            ? this.#https.request(request.url, options, onAnswer)
            : this.#http.request(request.url, options, onAnswer);
      sent.on('error', (error: Error) => {
        // In absolute form, the connection is the proxy's: its failure is told as the proxy's.
        if (target === undefined || proxy === undefined || request.signal.aborted) reject(error);
        else reject(proxyUnreachable(proxy, error));
      });
      sent.end(request.body);
    });
  }

  /** Closes the connections kept alive: a transport used once (a push at a run's end) holds none after. */
  close(): void {
    this.#httpAgent.destroy();
    this.#httpsAgent?.destroy();
    this.#tunnelAgent?.then((agent) => agent.destroy()).catch(() => {});
  }

  #directHttpsAgent(): HttpsAgent {
    this.#httpsAgent ??= new this.#https.Agent({ keepAlive: true, ...tlsOptions(this.#options.tls) });
    return this.#httpsAgent;
  }

  #tunnelled(proxy: ProxyConfig): Promise<HttpsAgent> {
    this.#tunnelAgent ??= import('./proxy-tunnel.js').then(
      ({ TunnelAgent }): HttpsAgent =>
        new TunnelAgent(
          proxy,
          tlsOptions(this.#options.tls),
          this.#options.proxyConnectTimeoutMs ?? PROXY_CONNECT_TIMEOUT_MS,
        ),
    );
    return this.#tunnelAgent;
  }
}

/**
 * TLS options of the API's connections beyond Node's defaults: the CA file's certificates trusted besides the
 * default ones (NODE_EXTRA_CA_CERTS's included), a client certificate. Verification always stays on.
 */
function tlsOptions(given: ApiTlsConfig | undefined): ConnectionOptions {
  if (given === undefined) return {};
  const options: ConnectionOptions = {};
  if (given.ca !== undefined) {
    const tls = process.getBuiltinModule('node:tls');
    // getCACertificates (Node 22.15) counts NODE_EXTRA_CA_CERTS in; rootCertificates, before it, does not.
    const defaults =
      typeof tls.getCACertificates === 'function' ? tls.getCACertificates('default') : tls.rootCertificates;
    options.ca = [...defaults, given.ca.pem];
  }
  if (given.client !== undefined) {
    options.cert = given.client.cert;
    options.key = given.client.key.reveal();
    if (given.client.passphrase !== undefined) options.passphrase = given.client.passphrase.reveal();
  }
  return options;
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
