/*
 * The run's metrics pushed to a Prometheus Pushgateway, for schedulers where no node_exporter reads a file: the same
 * text as the metrics file, under the grouping key job/post_reports_etl/schema/<schema>/organization/<organization>
 * (the pushed metrics then carry neither label, as the Pushgateway requires). A run that exited 0 replaces its group
 * (PUT); any other run replaces only the metrics it reports (POST), so that the last success pushed stays, as the
 * metrics file keeps it. Sent as every report to an endpoint is (endpoint-request.ts).
 */
import type { PushgatewayConfig } from '../config.js';
import { sendToEndpoint } from './endpoint-request.js';
import { type MetricsRun, type MetricsTarget, renderMetrics } from './metrics-file.js';

export const PUSHGATEWAY_JOB = 'post_reports_etl';

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

/** Pushes the run's metrics; throws EndpointError when the Pushgateway does not answer 2xx in time. */
export async function pushMetrics(
  config: PushgatewayConfig,
  target: MetricsTarget,
  run: MetricsRun,
  endedAt: Date,
): Promise<void> {
  await sendToEndpoint(config, {
    method: run.exitCode === 0 ? 'PUT' : 'POST',
    url: groupUrl(config.url, target),
    contentType: 'text/plain; version=0.0.4; charset=utf-8',
    body: renderMetrics(target, run, endedAt, undefined, { targetLabels: false }),
  });
}
