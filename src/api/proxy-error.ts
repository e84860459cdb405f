/*
 * What a proxy's refusal or loss is, for the transport that meets it (directly or in a tunnel) and for the
 * classification that makes it one line (connection-failure.ts).
 */
import type { ProxyConfig } from '../config.js';

/**
 * The proxy refused or failed a request: a CONNECT answered with another status than 200 (`status`), a connection
 * to it lost before its answer, or a 407 to a request in absolute form. Names the proxy without its credentials.
 */
export class ProxyError extends Error {
  /** The proxy's status; undefined when it answered none. */
  readonly status: number | undefined;
  /** `http://host:port`. */
  readonly proxy: string;

  constructor(proxy: string, status: number | undefined, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'ProxyError';
    this.proxy = proxy;
    this.status = status;
  }
}

/** A connection to the proxy that failed, or closed before its answer. */
export function proxyUnreachable(proxy: ProxyConfig, error: Error, what = 'answering'): ProxyError {
  const code = (error as NodeJS.ErrnoException).code ?? error.message;
  return new ProxyError(
    proxy.origin,
    undefined,
    `the proxy ${proxy.origin} (${proxy.source}) could not be reached, or closed the connection before ${what}: ${code}`,
    { cause: error },
  );
}
