import type { ApiClient } from '../api/client.js';
import { SETTINGS } from '../config.js';
import { ApiError, ConfigError, DataError } from '../errors.js';
import { FILTER_KINDS, FILTER_NAMES, type FilterKind, type Filters } from '../model/filters.js';
import { isRecord, kind } from './json-shape.js';

/** A custom segment dimension of the organization and its valid values. */
export interface SegmentDimension {
  name: string;
  values: string[];
}

/**
 * The valid filter values of the organization, as far as the service lists them: a list it leaves out (or sends as
 * null) is absent, and fails the run only when a filter needs it (validateFilters).
 */
export type Dimensions = { [K in FilterKind]?: string[] } & {
  customSegments: SegmentDimension[];
};

const DIMENSIONS_PATH = 'reports/posts/dimensions';

/**
 * Fetches GET /reports/posts/dimensions and checks its shape. It is the first request of every command that calls
 * the API, so a 404 there means the base URL is not the API's (API_NOT_FOUND, exit 2): no report was asked for.
 */
export async function fetchDimensions(client: ApiClient, signal?: AbortSignal): Promise<Dimensions> {
  const body = await client.getJson(DIMENSIONS_PATH, signal ? { signal } : {}).catch((error: unknown) => {
    if (error instanceof ApiError && error.status === 404) {
      throw new ApiError(
        'API_NOT_FOUND',
        `GET /${DIMENSIONS_PATH} answered 404: ${SETTINGS.baseUrl.env} (${SETTINGS.baseUrl.flag}) must be the API's base URL, ending in /v4`,
        { status: 404, ...(error.endpoint === undefined ? {} : { endpoint: error.endpoint }), cause: error },
      );
    }
    throw unreachable(error, client.baseUrl) ?? error;
  });
  return parseDimensions(body);
}

/** The system error code (ENOTFOUND, ECONNREFUSED) somewhere in an error's causes. */
function systemCode(error: unknown): string | undefined {
  for (let at: unknown = error, depth = 0; at instanceof Error && depth < 5; at = at.cause, depth += 1) {
    const code = (at as NodeJS.ErrnoException).code;
    if (typeof code === 'string' && /^E[A-Z]+$/.test(code)) return code;
  }
  return undefined;
}

/**
 * The first request of a command never reached the API, after its retries: said in one line naming the setting
 * and what to check. A host that does not resolve is a person's to fix (API_NOT_FOUND, exit 2); a refused or cut
 * connection may pass, and keeps its code.
 */
function unreachable(error: unknown, baseUrl: URL): ApiError | undefined {
  if (!(error instanceof ApiError) || error.code !== 'API_NETWORK_ERROR') return undefined;
  const code = systemCode(error);
  const where = `${SETTINGS.baseUrl.env} (${SETTINGS.baseUrl.flag})`;
  const host = baseUrl.host;
  const details = { ...(error.endpoint === undefined ? {} : { endpoint: error.endpoint }), cause: error };
  if (code === 'ENOTFOUND' || code === 'EAI_AGAIN') {
    return new ApiError(
      'API_NOT_FOUND',
      `cannot reach the API: its host ${JSON.stringify(baseUrl.hostname)} does not resolve (${code}): check the host name in ${where}, and the DNS or proxy this machine uses`,
      details,
    );
  }
  if (code === 'ECONNREFUSED') {
    return new ApiError(
      'API_NETWORK_ERROR',
      `cannot reach the API: ${host} refused the connection (${code}): check the port in ${where}, that the API is up, and any proxy or firewall on the way`,
      details,
    );
  }
  return undefined;
}

/** The dimensions response in the connector's shape; DataError('PAGE_MALFORMED') naming what is wrong. */
export function parseDimensions(body: unknown): Dimensions {
  if (!isRecord(body)) throw malformed(`the response is ${kind(body)}, not an object`);
  const lists: { [K in FilterKind]?: string[] } = {};
  for (const name of FILTER_NAMES) {
    const { api } = FILTER_KINDS[name];
    const value = body[api];
    // The service may send less than the spec shows: a list it leaves out is only needed by a filter on it.
    if (value !== undefined && value !== null) lists[name] = stringList(value, api);
  }
  const dimensions = { ...lists, customSegments: segmentDimensions(body.custom_segments) } as Dimensions;
  return dimensions;
}

function segmentDimensions(value: unknown): SegmentDimension[] {
  // The spec promises an empty array when none is configured; an absent field means the same.
  if (value === undefined || value === null) return [];
  if (!Array.isArray(value)) throw malformed(`custom_segments is ${kind(value)}, not an array`);
  return value.map((entry: unknown, i) => {
    if (!isRecord(entry) || typeof entry.name !== 'string') {
      throw malformed(`custom_segments[${i}] has no string name`);
    }
    return { name: entry.name, values: stringList(entry.values, `custom_segments "${entry.name}" values`) };
  });
}

function stringList(value: unknown, label: string): string[] {
  if (!Array.isArray(value) || !value.every((v) => typeof v === 'string')) {
    throw malformed(`${label} is ${kind(value)}, not an array of strings`);
  }
  return value as string[];
}

function malformed(why: string): DataError {
  return new DataError('PAGE_MALFORMED', `GET /${DIMENSIONS_PATH}: ${why}`);
}

/**
 * Checks the filters against the organization's dimensions before any report is created: the server only
 * answers 400, this names exactly which filter name or value is not valid, and lists the valid ones.
 * Every problem is reported at once, separated by "; ", in a ConfigError('FILTER_INVALID'). A filter on a list
 * the service always lists that the response left out is DataError('PAGE_MALFORMED').
 */
export function validateFilters(filters: Filters, dimensions: Dimensions): void {
  for (const name of FILTER_NAMES) {
    const { api, label, listedInDimensions } = FILTER_KINDS[name];
    if (listedInDimensions && filters[name] !== undefined && dimensions[name] === undefined) {
      throw malformed(`${api} is missing, and the ${label} filter needs it to check its values`);
    }
  }
  const problems: string[] = [];
  const check = (
    label: string,
    values: readonly string[] | undefined,
    valid: readonly string[] | undefined,
    suffix = '',
  ) => {
    if (values === undefined || valid === undefined) return;
    const allowed = new Set(valid);
    for (const value of values) {
      if (!allowed.has(value))
        problems.push(`unknown ${label} ${quote(value)}${suffix} (valid: ${listed(valid)})`);
    }
  };
  // A kind the service does not list is left to the server to judge.
  for (const name of FILTER_NAMES) check(FILTER_KINDS[name].label, filters[name], dimensions[name]);
  const segments = new Map(dimensions.customSegments.map((s) => [s.name, s.values]));
  for (const segment of filters.customSegments ?? []) {
    const valid = segments.get(segment.name);
    if (valid === undefined) {
      const names = [...segments.keys()];
      problems.push(
        `unknown custom segment ${quote(segment.name)} (${names.length > 0 ? `valid: ${listed(names)}` : 'the organization has no custom segments'})`,
      );
      continue;
    }
    check('custom segment value', segment.values, valid, ` for ${quote(segment.name)}`);
  }
  if (problems.length > 0) throw new ConfigError('FILTER_INVALID', problems.join('; '));
}

function quote(value: string): string {
  return JSON.stringify(value);
}

const MAX_LISTED = 30;

function listed(values: readonly string[]): string {
  const sorted = [...values].sort();
  const shown = sorted.slice(0, MAX_LISTED).join(', ');
  return sorted.length > MAX_LISTED ? `${shown}, … ${sorted.length - MAX_LISTED} more` : shown;
}
