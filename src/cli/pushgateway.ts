/*
 * The run's metrics pushed to a Prometheus Pushgateway, for schedulers where no node_exporter reads a file: the same
 * text as the metrics file, under the grouping key job/post_reports_etl/schema/<schema>/organization/<organization>
 * (the pushed metrics then carry neither label, as the Pushgateway requires). A run that exited 0 replaces its group
 * (PUT); any other run replaces only the metrics it reports (POST), so that the last success pushed stays, as the
 * metrics file keeps it. Sent by the connector's HTTP transport: the proxy the environment names for the
 * Pushgateway's host, and NODE_EXTRA_CA_CERTS, apply.
 */
import { HttpTransport } from '../api/http-transport.js';
import type { PushgatewayConfig } from '../config.js';
import { type MetricsRun, type MetricsTarget, renderMetrics } from './metrics-file.js';

export const PUSHGATEWAY_JOB = 'post_reports_etl';

/** How long a push may take, the answer read: a Pushgateway that hangs must not hold a scheduler's run. */
const PUSH_TIMEOUT_MS = 10_000;

/** The answer's body shown in an error, at most. */
const BODY_SHOWN = 200;

/**
 * A grouping key's label value in a URL path: percent-encoded, or in URL-safe base64 (`name@base64/…`) when it holds
 * a `/` (which percent-encoding does not hide from the Pushgateway's router) or is empty.
 */
function groupingPart(name: string, value: string): string {
  if (value === '' || value.includes('/')) {
    const encoded = Buffer.from(value).toString('base64url');
    return `${name}@base64/${encoded === '' ? '=' : encoded}`;
  }
  return `${name}/${encodeURIComponent(value)}`;
}

/** The URL of the target's group under the Pushgateway's root (which may have a path of its own). */
export function groupUrl(root: URL, target: MetricsTarget): URL {
  const url = new URL(root);
  const path = [
    'metrics',
    groupingPart('job', PUSHGATEWAY_JOB),
    groupingPart('schema', target.schema),
    groupingPart('organization', target.organization),
  ].join('/');
  url.pathname = `${url.pathname.replace(/\/+$/, '')}/${path}`;
  return url;
}

/** A push the Pushgateway did not take, or could not be reached for: its status (none: no answer) and reason. */
export class PushError extends Error {
  constructor(
    readonly status: number | undefined,
    message: string,
  ) {
    super(message);
    this.name = 'PushError';
  }
}

/** Pushes the run's metrics; throws PushError when the Pushgateway does not answer 2xx in time. */
export async function pushMetrics(
  config: PushgatewayConfig,
  target: MetricsTarget,
  run: MetricsRun,
  endedAt: Date,
  signal?: AbortSignal,
): Promise<void> {
  const body = renderMetrics(target, run, endedAt, undefined, { targetLabels: false });
  const url = groupUrl(config.url, target);
  const transport = new HttpTransport(config.proxy === undefined ? {} : { proxy: config.proxy });
  const timeout = AbortSignal.timeout(PUSH_TIMEOUT_MS);
  const stop = signal === undefined ? timeout : AbortSignal.any([signal, timeout]);
  try {
    const answer = await transport.send({
      method: run.exitCode === 0 ? 'PUT' : 'POST',
      url,
      headers: {
        'content-type': 'text/plain; version=0.0.4; charset=utf-8',
        ...(config.authorization === undefined ? {} : { authorization: config.authorization.reveal() }),
      },
      body,
      signal: stop,
    });
    const chunks: Buffer[] = [];
    for await (const chunk of answer.body) chunks.push(chunk);
    if (answer.status >= 200 && answer.status < 300) return;
    const text = Buffer.concat(chunks).toString('utf8').trim().slice(0, BODY_SHOWN);
    throw new PushError(answer.status, `answered ${answer.status}${text === '' ? '' : `: ${text}`}`);
  } catch (error) {
    if (error instanceof PushError) throw error;
    const reason = timeout.aborted
      ? `no answer within ${PUSH_TIMEOUT_MS / 1000} s`
      : error instanceof Error
        ? error.message
        : String(error);
    throw new PushError(undefined, reason);
  } finally {
    transport.close();
  }
}
