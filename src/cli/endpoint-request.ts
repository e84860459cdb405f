/*
 * One request to an endpoint a run reports to (a Pushgateway, an OpenLineage endpoint): sent by the connector's HTTP
 * transport (the proxy the environment names for the endpoint's host, NODE_EXTRA_CA_CERTS), with the URL's
 * credentials as Basic authorization, bounded in time; anything but a 2xx answer in time is an EndpointError, which the
 * caller reports as a warning: a run's outcome is never an endpoint's.
 */
import { HttpTransport } from '../api/http-transport.js';
import type { EndpointConfig } from '../config.js';

/** How long a request may take, the answer read: an endpoint that hangs must not hold a scheduler's run. */
export const ENDPOINT_TIMEOUT_MS = 10_000;

/** The answer's body shown in an error, at most. */
const BODY_SHOWN = 200;

/** A request the endpoint did not take, or could not be reached for: its status (none: no answer) and reason. */
export class EndpointError extends Error {
  constructor(
    readonly status: number | undefined,
    message: string,
  ) {
    super(message);
    this.name = 'EndpointError';
  }
}

export interface EndpointRequest {
  readonly method: 'POST' | 'PUT';
  readonly url: URL;
  readonly contentType: string;
  readonly body: string;
}

/** Sends the request; throws EndpointError when the endpoint does not answer 2xx in time. */
export async function sendToEndpoint(config: EndpointConfig, request: EndpointRequest): Promise<void> {
  const transport = new HttpTransport(config.proxy === undefined ? {} : { proxy: config.proxy });
  const timeout = AbortSignal.timeout(ENDPOINT_TIMEOUT_MS);
  try {
    const answer = await transport.send({
      method: request.method,
      url: request.url,
      headers: {
        'content-type': request.contentType,
        ...(config.authorization === undefined ? {} : { authorization: config.authorization.reveal() }),
      },
      body: request.body,
      signal: timeout,
    });
    const chunks: Buffer[] = [];
    for await (const chunk of answer.body) chunks.push(chunk);
    if (answer.status >= 200 && answer.status < 300) return;
    const text = Buffer.concat(chunks).toString('utf8').trim().slice(0, BODY_SHOWN);
    throw new EndpointError(answer.status, `answered ${answer.status}${text === '' ? '' : `: ${text}`}`);
  } catch (error) {
    if (error instanceof EndpointError) throw error;
    const reason = timeout.aborted
      ? `no answer within ${ENDPOINT_TIMEOUT_MS / 1000} s`
      : error instanceof Error
        ? error.message
        : String(error);
    throw new EndpointError(undefined, reason);
  } finally {
    transport.close();
  }
}
