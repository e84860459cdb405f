/**
 * The report filters. Every filter on a list of values is one entry of FILTER_KINDS: its setting (environment
 * variable, flag, help), its name in the API (request body, dimensions, simulator) and its label in messages.
 * Configuration, flags, the report request, the dimensions check and the simulator all read this table.
 */
export const FILTER_KINDS = {
  brands: {
    api: 'brands',
    label: 'brand',
    listedInDimensions: true,
    setting: { env: 'POST_REPORTS_BRANDS', flag: '--brands', description: 'Brands filter, comma-separated' },
  },
  markets: {
    api: 'markets',
    label: 'market',
    listedInDimensions: true,
    setting: {
      env: 'POST_REPORTS_MARKETS',
      flag: '--markets',
      description: 'Markets filter, comma-separated',
    },
  },
  channels: {
    api: 'channels',
    label: 'channel',
    listedInDimensions: true,
    setting: {
      env: 'POST_REPORTS_CHANNELS',
      flag: '--channels',
      description: 'Channels filter, comma-separated',
    },
  },
  adFormats: {
    api: 'ad_formats',
    label: 'ad format',
    // The spec leaves open whether the service lists these; unlisted means the server is the judge.
    listedInDimensions: false,
    setting: {
      env: 'POST_REPORTS_AD_FORMATS',
      flag: '--ad-formats',
      description: 'Ad formats filter, comma-separated',
    },
  },
  contentTypes: {
    api: 'content_types',
    label: 'content type',
    listedInDimensions: false,
    setting: {
      env: 'POST_REPORTS_CONTENT_TYPES',
      flag: '--content-types',
      description: 'Content types filter, comma-separated',
    },
  },
} as const;

/** A filter on a list of values (every filter but the custom segments). */
export type FilterKind = keyof typeof FILTER_KINDS;

/** The API's name of a filter kind (request body, dimensions). */
export type FilterApiName = (typeof FILTER_KINDS)[FilterKind]['api'];

export const FILTER_NAMES = Object.keys(FILTER_KINDS) as FilterKind[];

/** One custom segment filter: posts whose segment `name` has one of `values`. */
export interface SegmentFilter {
  readonly name: string;
  readonly values: readonly string[];
}

/** Report filters, in the connector's own (camelCase) form. An absent filter means "all". */
export type Filters = { readonly [K in FilterKind]?: readonly string[] } & {
  readonly customSegments?: readonly SegmentFilter[];
};

/** The filters in one canonical shape (sorted, de-duplicated, empty lists dropped), so that two runs compare equal. */
export function canonicalFilters(filters: Filters): Filters {
  const list = (values: readonly string[] | undefined) =>
    values && values.length > 0 ? [...new Set(values)].sort() : undefined;
  const out: { -readonly [K in keyof Filters]: Filters[K] } = {};
  for (const kind of FILTER_NAMES) {
    const values = list(filters[kind]);
    if (values) out[kind] = values;
  }
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
  for (const kind of FILTER_NAMES) {
    const values = filters[kind];
    if (values) body[FILTER_KINDS[kind].api] = values;
  }
  if (filters.customSegments) body.custom_segments = filters.customSegments;
  return body;
}
