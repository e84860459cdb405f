/** One custom segment filter: posts whose segment `name` has one of `values`. */
export interface SegmentFilter {
  readonly name: string;
  readonly values: readonly string[];
}

/** Report filters, in the connector's own (camelCase) form. An absent filter means "all". */
export interface Filters {
  readonly brands?: readonly string[];
  readonly markets?: readonly string[];
  readonly channels?: readonly string[];
  readonly adFormats?: readonly string[];
  readonly contentTypes?: readonly string[];
  readonly customSegments?: readonly SegmentFilter[];
}

/** The filters in one canonical shape (sorted, de-duplicated, empty lists dropped), so that two runs compare equal. */
export function canonicalFilters(filters: Filters): Filters {
  const list = (values: readonly string[] | undefined) =>
    values && values.length > 0 ? [...new Set(values)].sort() : undefined;
  const out: {
    brands?: readonly string[];
    markets?: readonly string[];
    channels?: readonly string[];
    adFormats?: readonly string[];
    contentTypes?: readonly string[];
    customSegments?: readonly SegmentFilter[];
  } = {};
  const brands = list(filters.brands);
  if (brands) out.brands = brands;
  const markets = list(filters.markets);
  if (markets) out.markets = markets;
  const channels = list(filters.channels);
  if (channels) out.channels = channels;
  const adFormats = list(filters.adFormats);
  if (adFormats) out.adFormats = adFormats;
  const contentTypes = list(filters.contentTypes);
  if (contentTypes) out.contentTypes = contentTypes;
  const segments = (filters.customSegments ?? [])
    .map((s) => ({ name: s.name, values: list(s.values) ?? [] }))
    .filter((s) => s.values.length > 0)
    .sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  if (segments.length > 0) out.customSegments = segments;
  return out;
}

/** The request body fields of a post report creation call (v4 plural names). */
export function filtersToRequest(filters: Filters): Record<string, unknown> {
  const body: Record<string, unknown> = {};
  if (filters.brands) body.brands = filters.brands;
  if (filters.markets) body.markets = filters.markets;
  if (filters.channels) body.channels = filters.channels;
  if (filters.adFormats) body.ad_formats = filters.adFormats;
  if (filters.contentTypes) body.content_types = filters.contentTypes;
  if (filters.customSegments) body.custom_segments = filters.customSegments;
  return body;
}
