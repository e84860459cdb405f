import { describe, expect, it } from 'vitest';
import { ConfigError, DataError } from '../../../src/errors.js';
import { type Dimensions, parseDimensions, validateFilters } from '../../../src/extract/dimensions.js';
import { toReportPage } from '../../../src/extract/pager.js';
import { isFailureStatus } from '../../../src/extract/report.js';

describe('isFailureStatus', () => {
  it.each([
    'FAILED',
    'ERROR',
    'CANCELLED',
    'CANCELED',
    'FATAL',
    'EXPIRED',
    'failed',
    'Failed: quota',
    'TIMED_OUT',
  ])('%s is a failure', (status) => expect(isFailureStatus(status)).toBe(true));
  it.each(['IN_PROGRESS', 'PENDING', 'QUEUED', 'RUNNING', 'DONE', 'PROCESSING', 'NEW'])(
    '%s is not a failure',
    (status) => expect(isFailureStatus(status)).toBe(false),
  );
});

describe('validateFilters', () => {
  const dimensions: Dimensions = parseDimensions({
    brands: ['Northwind Cola', 'Contoso'],
    markets: ['US', 'DE'],
    channels: ['Instagram', 'TikTok'],
    custom_segments: [{ name: 'Region', values: ['West', 'North', 'South', 'East'] }],
  });

  it('accepts valid filters and unchecked ad formats when the dimensions do not list them', () => {
    expect(() =>
      validateFilters(
        {
          brands: ['Contoso'],
          adFormats: ['Reels'],
          customSegments: [{ name: 'Region', values: ['North'] }],
        },
        dimensions,
      ),
    ).not.toThrow();
  });

  it('names the bad segment value and lists the valid ones', () => {
    expect(() =>
      validateFilters({ customSegments: [{ name: 'Region', values: ['North', 'Nowhere'] }] }, dimensions),
    ).toThrow('unknown custom segment value "Nowhere" for "Region" (valid: East, North, South, West)');
  });

  it('reports every bad name and value at once, as FILTER_INVALID', () => {
    let error: unknown;
    try {
      validateFilters(
        { brands: ['Fabrikam'], channels: ['Myspace'], customSegments: [{ name: 'Area', values: ['x'] }] },
        dimensions,
      );
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(ConfigError);
    expect((error as ConfigError).code).toBe('FILTER_INVALID');
    expect((error as ConfigError).message).toBe(
      'unknown brand "Fabrikam" (valid: Contoso, Northwind Cola); unknown channel "Myspace" (valid: Instagram, TikTok); unknown custom segment "Area" (valid: Region)',
    );
  });

  it('checks ad formats when the dimensions list them', () => {
    expect(() => validateFilters({ adFormats: ['Story'] }, { ...dimensions, adFormats: ['Reels'] })).toThrow(
      'unknown ad format "Story" (valid: Reels)',
    );
  });

  it('refuses a malformed dimensions answer', () => {
    expect(() => parseDimensions({ brands: 'all' })).toThrow(DataError);
    expect(() => parseDimensions({ brands: [], markets: [], channels: [1] })).toThrow('channels is an array');
  });
});

describe('toReportPage', () => {
  const ok = { id: 'r', status: 'DONE', data: [{ id: 7, a: 1 }], response_metadata: [{ next_page: 'g' }] };
  const mapping = { postIdField: 'id', window: { start: '2026-11-01', end: '2026-11-02' } };
  it('returns the posts mapped and the next token', () => {
    expect(toReportPage(ok, 'r', 3, 'f', 10, mapping)).toEqual({
      index: 3,
      token: 'f',
      nextPage: 'g',
      posts: [{ id: '7', fields: Object.assign(Object.create(null), { a: 1 }), segments: [] }],
      bytes: 10,
      // Read the full way: its one value counts as read so, for the run's count of the slow path.
      reading: { onePass: false, values: 1, valuesTheFullWay: 1 },
    });
  });
  it.each([
    [{ ...ok, data: undefined }, 'data is missing, not an array'],
    [{ ...ok, data: [1] }, 'data[0] is a number, not an object'],
    [{ ...ok, data: Array.from({ length: 1001 }, () => ({})) }, 'data holds 1001 posts'],
    [{ ...ok, response_metadata: {} }, 'response_metadata is an object'],
    [{ ...ok, response_metadata: [{ next_page: 5 }] }, 'response_metadata[0].next_page is a number'],
    [{ ...ok, response_metadata: [{ next_page: 'f' }] }, 'next_page repeats the token'],
  ])('refuses a malformed page naming report and page (%#)', (body, why) => {
    expect(() => toReportPage(body, 'r', 3, 'f', 10, mapping)).toThrow(`report r, page 3: ${why}`);
  });
});
