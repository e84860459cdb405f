import { FILTER_KINDS, type FilterApiName } from '../model/filters.js';
import { parseDay } from './calendar.js';
import type { Organization } from './organization.js';

/** The v4 report creation body, snake_case as on the wire. Dates are inclusive. */
export type ReportParams = { [K in FilterApiName]?: string[] } & ReportBody;

interface ReportBody {
  start_date: string;
  end_date: string;
  custom_segments?: { name: string; values: string[] }[];
}

/** Validated params with the day range resolved. */
export interface ValidParams {
  readonly params: ReportParams;
  readonly startDay: number;
  readonly endDay: number;
}

/** Why a creation body is refused (answered 400). */
export class InvalidParamsError extends Error {
  override readonly name = 'InvalidParamsError';
}

/**
 * Longest accepted range. The real limit is undocumented; without one, a request for 0001-01-01..9999-12-31
 * would make the simulator enumerate billions of posts.
 */
export const MAX_RANGE_DAYS = 3660;

/** The filters on lists of values, by their names on the wire. */
export const FILTER_NAMES: readonly FilterApiName[] = Object.values(FILTER_KINDS).map((kind) => kind.api);

function quote(value: unknown): string {
  let text: string;
  try {
    text = JSON.stringify(value) ?? String(value);
  } catch {
    // A deeply nested body overflows the stack of JSON.stringify; the message only needs a hint.
    text = Array.isArray(value) ? 'an array' : typeof value;
  }
  return text.length > 80 ? `${text.slice(0, 77)}...` : text;
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function stringArray(value: unknown, what: string): string[] {
  if (!Array.isArray(value))
    throw new InvalidParamsError(`${what} must be an array of strings, got ${quote(value)}`);
  for (const item of value) {
    if (typeof item !== 'string') {
      throw new InvalidParamsError(`${what} must be an array of strings, got an item ${quote(item)}`);
    }
  }
  return value as string[];
}

function date(body: Record<string, unknown>, key: 'start_date' | 'end_date'): number {
  const value = body[key];
  if (value === undefined) throw new InvalidParamsError(`${key} is required`);
  if (typeof value !== 'string')
    throw new InvalidParamsError(`${key} must be a YYYY-MM-DD string, got ${quote(value)}`);
  const day = parseDay(value);
  if (day === null) throw new InvalidParamsError(`${key} ${quote(value)} is not a valid YYYY-MM-DD date`);
  return day;
}

/**
 * Validates a creation body as the service does. Decisions where the spec is silent:
 * - both dates are required; unknown top-level keys are ignored, as JSON APIs usually do;
 * - custom segment names and values are validated (the spec says so), but unknown brands, markets, channels,
 *   ad formats and content types are not: like the production service's filters, they just match no post;
 * - an empty filter array means "no filter", the same as leaving it out.
 */
export function validateReportParams(body: unknown, organization: Organization): ValidParams {
  if (!isRecord(body))
    throw new InvalidParamsError(`the request body must be a JSON object, got ${quote(body)}`);
  const startDay = date(body, 'start_date');
  const endDay = date(body, 'end_date');
  if (endDay < startDay) {
    throw new InvalidParamsError(
      `end_date ${quote(body.end_date)} is before start_date ${quote(body.start_date)}`,
    );
  }
  if (endDay - startDay + 1 > MAX_RANGE_DAYS) {
    throw new InvalidParamsError(
      `the date range spans ${endDay - startDay + 1} days; at most ${MAX_RANGE_DAYS} are allowed`,
    );
  }
  const params: ReportParams = { start_date: body.start_date as string, end_date: body.end_date as string };
  for (const name of FILTER_NAMES) {
    const value = body[name];
    if (value !== undefined) params[name] = [...stringArray(value, name)];
  }
  const segments = body.custom_segments;
  if (segments !== undefined) {
    if (!Array.isArray(segments)) {
      throw new InvalidParamsError(
        `custom_segments must be an array of {name, values} objects, got ${quote(segments)}`,
      );
    }
    params.custom_segments = segments.map((entry: unknown) => {
      if (!isRecord(entry) || typeof entry.name !== 'string') {
        throw new InvalidParamsError(
          `custom_segments entries must be {name, values} objects, got ${quote(entry)}`,
        );
      }
      const dimension = organization.segmentDimensions.find((candidate) => candidate.name === entry.name);
      if (dimension === undefined) {
        throw new InvalidParamsError(
          `custom segment ${quote(entry.name)} is not a dimension of this organization`,
        );
      }
      const values = stringArray(entry.values, `custom_segments ${quote(entry.name)} values`);
      for (const value of values) {
        if (!dimension.values.includes(value)) {
          throw new InvalidParamsError(
            `${quote(value)} is not a value of custom segment ${quote(entry.name)}`,
          );
        }
      }
      return { name: entry.name, values: [...values] };
    });
  }
  return { params, startDay, endDay };
}

function canonicalValues(values: readonly string[] | undefined): string[] | undefined {
  if (values === undefined || values.length === 0) return undefined;
  return [...new Set(values)].sort();
}

/** A key equal for creation bodies that ask for the same report (order and duplicates do not matter). */
export function canonicalKey(params: ReportParams): string {
  const segments = new Map<string, Set<string>>();
  for (const entry of params.custom_segments ?? []) {
    if (entry.values.length === 0) continue;
    const seen = segments.get(entry.name);
    // Two entries for one dimension both apply: the post must satisfy each, i.e. the intersection.
    segments.set(
      entry.name,
      seen === undefined ? new Set(entry.values) : new Set(entry.values.filter((v) => seen.has(v))),
    );
  }
  return JSON.stringify([
    params.start_date,
    params.end_date,
    ...FILTER_NAMES.map((name) => canonicalValues(params[name]) ?? null),
    [...segments.entries()]
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
      .map(([name, values]) => [name, [...values].sort()]),
  ]);
}
