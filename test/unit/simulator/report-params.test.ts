import { describe, expect, it } from 'vitest';
import { createOrganization } from '../../../src/simulator/organization.js';
import {
  canonicalKey,
  InvalidParamsError,
  validateReportParams,
} from '../../../src/simulator/report-params.js';

const organization = createOrganization(1);

describe('report params', () => {
  it('gives the same key to bodies that ask for the same report', () => {
    const a = canonicalKey({
      start_date: '2026-01-01',
      end_date: '2026-01-02',
      brands: ['B', 'A'],
      custom_segments: [
        { name: 'Region', values: ['West', 'North'] },
        { name: 'Campaign Type', values: ['Seasonal'] },
      ],
    });
    const b = canonicalKey({
      end_date: '2026-01-02',
      start_date: '2026-01-01',
      brands: ['A', 'B', 'A'],
      markets: [],
      custom_segments: [
        { name: 'Campaign Type', values: ['Seasonal'] },
        { name: 'Region', values: ['North', 'West'] },
      ],
    });
    expect(b).toBe(a);
    expect(canonicalKey({ start_date: '2026-01-01', end_date: '2026-01-02', brands: ['A'] })).not.toBe(a);
  });

  it('keeps only the known keys of a valid body', () => {
    const valid = validateReportParams(
      { start_date: '2026-01-01', end_date: '2026-01-03', channels: ['X'], extra: 1 },
      organization,
    );
    expect(valid.params).toEqual({ start_date: '2026-01-01', end_date: '2026-01-03', channels: ['X'] });
    expect(valid.endDay - valid.startDay).toBe(2);
  });

  it('names the bad value', () => {
    expect(() =>
      validateReportParams(
        {
          start_date: '2026-01-01',
          end_date: '2026-01-01',
          custom_segments: [{ name: 'Region', values: ['Mars'] }],
        },
        organization,
      ),
    ).toThrow(new InvalidParamsError('"Mars" is not a value of custom segment "Region"'));
  });
});
