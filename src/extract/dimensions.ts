import type { ApiClient } from '../api/client.js';
import { ConfigError, DataError } from '../errors.js';
import type { Filters } from './filters.js';

/** A custom segment dimension of the organization and its valid values. */
export interface SegmentDimension {
  name: string;
  values: string[];
}

/** The valid filter values of the organization. ad_formats and content_types only when the service lists them. */
export interface Dimensions {
  brands: string[];
  markets: string[];
  channels: string[];
  customSegments: SegmentDimension[];
  adFormats?: string[];
  contentTypes?: string[];
}

const DIMENSIONS_PATH = 'reports/posts/dimensions';

/** Fetches GET /reports/posts/dimensions and checks its shape. */
export async function fetchDimensions(client: ApiClient, signal?: AbortSignal): Promise<Dimensions> {
  const body = await client.getJson(DIMENSIONS_PATH, signal ? { signal } : {});
  return parseDimensions(body);
}

/** The dimensions response in the connector's shape; DataError('PAGE_MALFORMED') naming what is wrong. */
export function parseDimensions(body: unknown): Dimensions {
  if (!isRecord(body)) throw malformed(`the response is ${kind(body)}, not an object`);
  const dimensions: Dimensions = {
    brands: stringList(body.brands, 'brands'),
    markets: stringList(body.markets, 'markets'),
    channels: stringList(body.channels, 'channels'),
    customSegments: segmentDimensions(body.custom_segments),
  };
  if (body.ad_formats !== undefined && body.ad_formats !== null) {
    dimensions.adFormats = stringList(body.ad_formats, 'ad_formats');
  }
  if (body.content_types !== undefined && body.content_types !== null) {
    dimensions.contentTypes = stringList(body.content_types, 'content_types');
  }
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

function kind(value: unknown): string {
  if (value === undefined) return 'missing';
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'an array';
  return typeof value === 'object' ? 'an object' : `a ${typeof value}`;
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/**
 * Checks the filters against the organization's dimensions before any report is created: the server only
 * answers 400, this names exactly which filter name or value is not valid, and lists the valid ones.
 * Every problem is reported at once, separated by "; ", in a ConfigError('FILTER_INVALID').
 */
export function validateFilters(filters: Filters, dimensions: Dimensions): void {
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
  check('brand', filters.brands, dimensions.brands);
  check('market', filters.markets, dimensions.markets);
  check('channel', filters.channels, dimensions.channels);
  // The spec leaves open whether the service lists these; unlisted means the server is the judge.
  check('ad format', filters.adFormats, dimensions.adFormats);
  check('content type', filters.contentTypes, dimensions.contentTypes);
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
