/*
 * OpenLineage run events for the schedulers and catalogs that collect them (Airflow, Marquez): START when a run
 * begins, and COMPLETE (exit 0), FAIL (any other exit) or ABORT (stopped by a signal) when it ends, POSTed as JSON to
 * `<url>/api/v1/lineage` (the HTTP transport of the OpenLineage clients). The job is the command on its schema and
 * organization; the outputs are the tables a run writes, named as OpenLineage names PostgreSQL datasets
 * (`postgres://host:port`, `database.schema.table`). Sent as every report to an endpoint is (endpoint-request.ts).
 */
import { randomUUID } from 'node:crypto';
import type { OpenLineageConfig } from '../config.js';
import { VERSION } from '../version.js';
import { sendToEndpoint } from './endpoint-request.js';

const SCHEMA_URL = 'https://openlineage.io/spec/2-0-2/OpenLineage.json#/$defs/RunEvent';
const PRODUCER = `https://www.npmjs.com/package/post-reports-etl/v/${VERSION}`;
/** The tables a run writes its rows to. */
const OUTPUT_TABLES = ['posts', 'post_custom_segments'] as const;

export type LineageEventType = 'START' | 'COMPLETE' | 'FAIL' | 'ABORT';

/** What a run's events say of it. */
export interface LineageRun {
  readonly runId: string;
  readonly command: 'backfill' | 'sync';
  readonly schema: string;
  readonly organization: string;
  /** The database's `postgres://host:port` and name (never its user or password). */
  readonly database: { readonly namespace: string; readonly name: string };
}

/** How a run ended, for its last event. */
export interface LineageEnd {
  readonly type: Exclude<LineageEventType, 'START'>;
  /** Rows of posts loaded, when the run ran. */
  readonly rows?: number;
  /** The error's code and message (scrubbed), when it failed. */
  readonly error?: string;
}

/** A new run's identity: a random UUID, as the spec asks. */
export function lineageRun(
  command: LineageRun['command'],
  schema: string,
  organization: string,
  databaseUrl: string,
): LineageRun {
  return { runId: randomUUID(), command, schema, organization, database: databaseDataset(databaseUrl) };
}

/** OpenLineage's naming of a PostgreSQL database: `postgres://host:port`, and the database's name. */
export function databaseDataset(databaseUrl: string): LineageRun['database'] {
  try {
    const url = new URL(databaseUrl);
    const host = url.hostname || url.searchParams.get('host') || 'localhost';
    const port = url.port || url.searchParams.get('port') || '5432';
    const name = decodeURIComponent(url.pathname.replace(/^\//, '')) || 'postgres';
    return { namespace: `postgres://${host}:${port}`, name };
  } catch {
    return { namespace: 'postgres://localhost:5432', name: 'postgres' };
  }
}

/** The event of `type` for the run, at `at`. */
export function lineageEvent(
  config: Pick<OpenLineageConfig, 'namespace'>,
  run: LineageRun,
  at: Date,
  end?: LineageEnd,
): Record<string, unknown> {
  const facet = (name: string, fields: Record<string, unknown>) => ({
    _producer: PRODUCER,
    _schemaURL: `https://openlineage.io/spec/facets/1-0-0/${name}.json#/$defs/${name}`,
    ...fields,
  });
  return {
    eventType: end?.type ?? 'START',
    eventTime: at.toISOString(),
    producer: PRODUCER,
    schemaURL: SCHEMA_URL,
    run: {
      runId: run.runId,
      ...(end?.error === undefined
        ? {}
        : {
            facets: {
              errorMessage: facet('ErrorMessageRunFacet', {
                message: end.error,
                programmingLanguage: 'JavaScript',
              }),
            },
          }),
    },
    job: {
      namespace: config.namespace,
      name: `${run.command}.${run.schema}.${run.organization}`,
    },
    inputs: [],
    outputs: OUTPUT_TABLES.map((table) => ({
      namespace: run.database.namespace,
      name: `${run.database.name}.${run.schema}.${table}`,
      ...(table === 'posts' && end?.rows !== undefined
        ? {
            outputFacets: {
              outputStatistics: facet('OutputStatisticsOutputDatasetFacet', { rowCount: end.rows }),
            },
          }
        : {}),
    })),
  };
}

/** Sends one event; throws EndpointError when the endpoint does not take it. */
export async function sendLineageEvent(
  config: OpenLineageConfig,
  run: LineageRun,
  at: Date,
  end?: LineageEnd,
): Promise<void> {
  const url = new URL(config.url);
  url.pathname = `${url.pathname.replace(/\/+$/, '')}/api/v1/lineage`;
  await sendToEndpoint(config, {
    method: 'POST',
    url,
    contentType: 'application/json',
    body: JSON.stringify(lineageEvent(config, run, at, end)),
  });
}
