import type { Organization } from './organization.js';
import type { ReportParams } from './report-params.js';

/** Report filters compiled to per-index flags of the organization's values; null means "no filter". */
export interface PostFilter {
  readonly brands: Uint8Array | null;
  readonly markets: Uint8Array | null;
  readonly channels: Uint8Array | null;
  readonly adFormats: Uint8Array | null;
  readonly contentTypes: Uint8Array | null;
  /** Per segment dimension, in the organization's order. */
  readonly segments: readonly (Uint8Array | null)[];
}

function flags(names: readonly string[], wanted: readonly string[] | undefined): Uint8Array | null {
  if (wanted === undefined || wanted.length === 0) return null;
  const result = new Uint8Array(names.length);
  for (const value of wanted) {
    const index = names.indexOf(value);
    if (index >= 0) result[index] = 1;
  }
  return result;
}

/** Compiles validated params. A value the organization does not know sets no flag: it matches no post. */
export function compileFilter(params: ReportParams, organization: Organization): PostFilter {
  const segments = organization.segmentDimensions.map((dimension) => {
    let result: Uint8Array | null = null;
    for (const entry of params.custom_segments ?? []) {
      if (entry.name !== dimension.name || entry.values.length === 0) continue;
      const entryFlags = flags(dimension.values, entry.values) as Uint8Array;
      if (result === null) result = entryFlags;
      else for (let i = 0; i < result.length; i++) result[i] = (result[i] ?? 0) & (entryFlags[i] ?? 0);
    }
    return result;
  });
  return {
    brands: flags(
      organization.brands.map((brand) => brand.name),
      params.brands,
    ),
    markets: flags(organization.markets, params.markets),
    channels: flags(
      organization.channels.map((channel) => channel.name),
      params.channels,
    ),
    adFormats: flags(organization.adFormats, params.ad_formats),
    contentTypes: flags(organization.contentTypes, params.content_types),
    segments,
  };
}
