/*
 * Requests through a forward proxy: https:// in a CONNECT tunnel (TLS from end to end, the proxy sees the host
 * name only), http:// in absolute form. Loaded only when a proxy is configured.
 */
import type { ClientRequest, IncomingMessage, RequestOptions } from 'node:http';
import type { Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import type { ConnectionOptions, TLSSocket } from 'node:tls';
import type { ProxyConfig } from '../config.js';
import { ProxyError, proxyUnreachable } from './proxy-error.js';

type Callback = (error: Error | null, stream: Duplex) => void;

const http = process.getBuiltinModule('node:http');
const https = process.getBuiltinModule('node:https');
const tls = process.getBuiltinModule('node:tls');

/**
 * An https agent whose connections are CONNECT tunnels through the proxy: each kept alive and used again for the
 * next request to the same host, as a direct one is.
 */
export class TunnelAgent extends https.Agent {
  readonly #proxy: ProxyConfig;
  readonly #connectTimeoutMs: number;

  constructor(proxy: ProxyConfig, tlsOptions: ConnectionOptions, connectTimeoutMs: number) {
    super({ keepAlive: true, ...tlsOptions });
    this.#proxy = proxy;
    this.#connectTimeoutMs = connectTimeoutMs;
  }

  // Node's Agent takes a connection made later when createConnection returns nothing and calls back.
  override createConnection(options: RequestOptions, callback?: Callback): undefined {
    const host = options.host ?? 'localhost';
    const port = Number(options.port ?? 443);
    const authority = `${host.includes(':') ? `[${host}]` : host}:${port}`;
    const proxy = this.#proxy;
    const headers: Record<string, string> = { host: authority };
    if (proxy.authorization !== undefined) headers['proxy-authorization'] = proxy.authorization.reveal();
    let settled = false;
    const settle = (error: Error | null, socket?: Duplex): void => {
      if (settled) return;
      settled = true;
      // Node's Agent passes a callback always; with an error, it reads no stream.
      callback?.(error, socket as Duplex);
    };
    const connect: ClientRequest = http.request({
      host: proxy.host,
      port: proxy.port,
      method: 'CONNECT',
      path: authority,
      headers,
      agent: false,
    });
    // Not the request's timeout option: that would stay on the socket the tunnel goes on in.
    const timer = setTimeout(() => {
      connect.destroy(
        new ProxyError(
          proxy.origin,
          undefined,
          `the proxy ${proxy.origin} (${proxy.source}) did not answer CONNECT ${authority} within ${this.#connectTimeoutMs} ms`,
        ),
      );
    }, this.#connectTimeoutMs);
    connect.once('connect', (response: IncomingMessage, socket: Socket, head: Buffer) => {
      clearTimeout(timer);
      const status = response.statusCode ?? 0;
      if (status < 200 || status > 299) {
        socket.destroy();
        settle(
          new ProxyError(
            proxy.origin,
            response.statusCode,
            `the proxy ${proxy.origin} (${proxy.source}) answered ${response.statusCode} to CONNECT ${authority}`,
          ),
        );
        return;
      }
      if (head.length > 0) socket.unshift(head);
      const secure: TLSSocket = tls.connect({ ...(options as ConnectionOptions), socket, host });
      settle(null, secure);
    });
    connect.once('error', (error: Error) => {
      clearTimeout(timer);
      settle(
        error instanceof ProxyError
          ? error
          : proxyUnreachable(proxy, error, `answering CONNECT ${authority}`),
      );
    });
    connect.once('close', () => {
      clearTimeout(timer);
      settle(
        new ProxyError(
          proxy.origin,
          undefined,
          `the proxy ${proxy.origin} (${proxy.source}) closed the connection before answering CONNECT ${authority}`,
        ),
      );
    });
    connect.end();
    return undefined;
  }
}

/**
 * The request options of an http:// request sent to the proxy in absolute form (the whole URL as its target, its
 * credentials in Proxy-Authorization), on `agent`: kept-alive connections to the proxy, used for any host.
 */
export function absoluteFormOptions(
  proxy: ProxyConfig,
  url: URL,
  headers: Record<string, string>,
): RequestOptions {
  return {
    host: proxy.host,
    port: proxy.port,
    path: url.href,
    headers: {
      host: url.host,
      ...headers,
      ...(proxy.authorization === undefined ? {} : { 'proxy-authorization': proxy.authorization.reveal() }),
    },
  };
}
